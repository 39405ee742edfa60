"""The sandbox's network for `--network allowlist` and `--network none`: the relay of the
grader's (and a loopback driver's) ports into the sandbox's own network namespace, and under
allowlist the egress proxy (`a2rl.sandbox._proxy`) with the allow-list derived from the agent's
API hosts, the task and `--allow-host`."""

from a2rl.extensions.network._wiring import allow_list, loopback_port, proxy_env

__all__ = ["allow_list", "loopback_port", "proxy_env"]
