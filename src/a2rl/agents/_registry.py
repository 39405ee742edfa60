"""Agent registry. Adding an agent = one module + one line in BUILTIN_AGENTS (or an entry point)."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from a2rl._errors import A2RLError
from a2rl.agents._agent import Agent, CommandAgent

BUILTIN_AGENTS: dict[str, str] = {
    "reference": "a2rl.agents.reference:ReferenceAgent",
}
DEFAULT_AGENT = "reference"


def _all_agents() -> dict[str, str]:
    found = dict(BUILTIN_AGENTS)
    for ep in entry_points(group="a2rl.agents"):
        found.setdefault(ep.name, ep.value)
    return found


def list_agents() -> list[str]:
    return sorted(_all_agents()) + ["cmd:<shell command>"]


def get_agent(spec: str) -> Agent:
    """'reference', another registered name, or 'cmd:<shell command>'."""
    if spec.startswith("cmd:"):
        command = spec[4:].strip()
        if not command:
            raise A2RLError("--agent cmd: needs a command", "e.g. --agent cmd:'./my_agent.sh'")
        return CommandAgent(command)
    agents = _all_agents()
    if spec not in agents:
        raise A2RLError(f"unknown agent {spec!r}",
                        f"choose one of: {', '.join(sorted(agents))}, or cmd:'<shell command>'")
    module, _, attr = agents[spec].partition(":")
    cls = getattr(importlib.import_module(module), attr)
    return cls()  # type: ignore[no-any-return]
