"""The runner-side pieces of the sandbox's network: the allow-list, the proxy's environment,
the port of a driver on this machine's loopback, a free port for the proxy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from a2rl.sandbox import default_allow_list

if TYPE_CHECKING:
    from a2rl.agents import Agent
    from a2rl.schema import RunConfig
    from a2rl.tasks import Task


def allow_list(config: RunConfig, agent: Agent, tasks: Sequence[Task]) -> list[str]:
    """The derived allow-list: the agent's API hosts (its own `network_hosts()` if it has one,
    else its declared `api_hosts`) or the driver endpoint's host, package indexes when every task
    permits them (`Task.allow_package_index`), and --allow-host."""
    hook = getattr(agent, "network_hosts", None)
    own = list(hook(config.driver_base_url)) if callable(hook) else None
    packages = all(bool(getattr(task, "allow_package_index", False)) for task in tasks)
    hosts = default_allow_list(agent.api_hosts, config.driver_base_url, own or [],
                               package_indexes=packages) if own is None else own
    if own is not None and packages:
        hosts += default_allow_list((), None, [], package_indexes=True)
    return list(dict.fromkeys([*hosts, *config.allow_hosts]))


def proxy_env(port: int) -> dict[str, str]:
    """Every spelling HTTP clients read (curl, pip, requests/httpx, node, Go, Rust)."""
    url = f"http://127.0.0.1:{port}"
    local = "127.0.0.1,localhost,::1"
    return {"HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
            "ALL_PROXY": url, "all_proxy": url, "NO_PROXY": local, "no_proxy": local,
            "A2RL_EGRESS_PROXY": url}


def free_port(taken: set[int]) -> int:
    """A port for the proxy inside the sandbox's own namespace (nothing else listens there but
    the relayed ports); chosen free on the host too so the URL reads the same everywhere."""
    import socket

    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in taken:
            return port


def loopback_port(url: str | None) -> int | None:
    """The port of a driver endpoint on this machine's loopback (relayed under network none)."""
    if not url:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return None
    return parts.port or (443 if parts.scheme == "https" else 80)
