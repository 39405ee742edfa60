"""The built-in inference engines: each module here is one, named after the module, whose
class carries `@engines.register(name)` and its `EngineSpec` as `engine_spec` (the
distributions that provide it, whether it may live in a venv of its own). The registry in
`a2rl.inference` lists them without importing them; importing one imports neither torch nor
vLLM (the engine imports them when it loads a model)."""
