"""The built-in sandbox backends: each module here is one, registered under the module's name
(`@sandboxes.register("<module name>")`); `a2rl.sandbox.sandboxes` lists them without
importing them. A backend's tests are the contract suite (tests/sandbox/test_sandbox_contract.py) run
on it."""
