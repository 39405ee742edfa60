"""The sandbox's network as a run extension: checked before the run folder exists, wired into
the agent's launch (relay, proxy, environment), closed after the drain with the proxy's counts
in each record."""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2rl._errors import A2RLError
from a2rl.extensions import AgentLaunch, RunExtension, extensions
from a2rl.extensions.network._wiring import allow_list, free_port, loopback_port, proxy_env

EGRESS_SYSCALLS = ("connect", "clone", "clone3", "fork", "vfork")
"""Traced under allowlist (with the exec trace): each connection to the proxy's port by the
process that made it, and which process started which (threads included)."""

if TYPE_CHECKING:
    from a2rl.sandbox import EgressProxy, Handler, HostBridge
    from a2rl.schema import RunConfig


@extensions.register("network")
class NetworkExtension(RunExtension):
    """`--network allowlist` or `none`: the sandbox has its own network namespace."""

    name = "network"
    hook_order = 60
    enabled_by_name = False

    def __init__(self, config: RunConfig) -> None:
        super().__init__(config)
        self.bridge: HostBridge | None = None
        self.proxy: EgressProxy | None = None

    @classmethod
    def enabled(cls, config: RunConfig) -> bool:
        return config.network in ("allowlist", "none")

    @classmethod
    def check(cls, config: RunConfig) -> None:
        if config.sandbox == "none":
            raise A2RLError(f"--network {config.network} needs a sandbox (its own network "
                            "namespace)", "drop --no-sandbox, or use --network full")
        if config.network == "none" and config.driver_base_url \
                and loopback_port(config.driver_base_url) is None:
            raise A2RLError(f"--network none cannot reach the driver at "
                            f"{config.driver_base_url}",
                            "use --network full for a hosted driver, or serve the driver on "
                            "this machine's loopback (e.g. vLLM on http://127.0.0.1:8000/v1)")

    def agent_environment(self, launch: AgentLaunch) -> None:
        """The grader's ports (and a loopback driver's) relayed in; under allowlist the proxy
        served on a port of its own and named in the agent's environment."""
        from a2rl.sandbox import EgressProxy, HostBridge

        config = launch.config
        driver_port = loopback_port(config.driver_base_url)
        ports = [part.server.port for part in launch.parts if part.server is not None] + (
            [driver_port] if driver_port else [])
        served: dict[int, Handler] = {}
        if config.network == "allowlist":
            allowed = allow_list(config, launch.agent, [part.task for part in launch.parts])
            proxy_port = free_port(set(ports))
            self.proxy = EgressProxy(allowed, launch.agent_dir / "network.jsonl", port=proxy_port)
            # the exec trace then shows which process connected to the proxy, and its parent
            launch.trace_syscalls += [s for s in EGRESS_SYSCALLS if s not in launch.trace_syscalls]
            served[proxy_port] = self.proxy.handle
            launch.env.update(proxy_env(proxy_port))
            for part in launch.parts:
                part.record.allowed_hosts = allowed
        self.bridge = launch.bridge = HostBridge(ports, served=served).start()

    def launch_closed(self, launch: AgentLaunch) -> None:
        if self.bridge is not None:
            self.bridge.stop()
        if self.proxy is not None:
            self.proxy.close()
            for part in launch.parts:
                part.record.network_attempts = dict(self.proxy.counts)
