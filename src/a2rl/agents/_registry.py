"""Agent registry (`agents`). Each module or folder under `a2rl/agents/` (a name without a
leading underscore) is the built-in agent of that name (`_` read as `-`), whose class carries
`@agents.register(name)`: adding an agent is adding its module. A package of its own registers
through an `a2rl.agents` entry point (`name = "pkg.module:Class"`)."""

from __future__ import annotations

from a2rl._errors import A2RLError
from a2rl._plugins import Registry
from a2rl.agents._agent import Agent, CommandAgent

agents: Registry[type[Agent]] = Registry("agent", "a2rl.agents", package="a2rl.agents")
"""The agents by name: the built-in launchers, then `a2rl.agents` entry points."""
BUILTIN_AGENTS: dict[str, str] = agents.builtin
"""name -> the module that registers it (or "module:Class"): the registry's own table, so an
entry added here is a built-in agent."""
DEFAULT_AGENT = "reference"


def list_agents() -> list[str]:
    return agents.names() + ["cmd:<shell command>"]


def agent_class(name: str) -> type[Agent]:
    """The registered agent `name`, checked to be an `Agent` that names itself so."""
    if name not in agents:
        raise A2RLError(f"unknown agent {name!r}",
                        f"choose one of: {', '.join(agents.names())}, or cmd:'<shell command>'")
    cls = agents.get(name)
    if not (isinstance(cls, type) and issubclass(cls, Agent)) or getattr(cls, "name", None) != name:
        raise A2RLError(f"the agent registered as {name!r} ({cls!r}) is not an Agent subclass "
                        "named so", f"register a subclass of a2rl.agents.Agent with name = {name!r}")
    return cls


def get_agent(spec: str) -> Agent:
    """'reference', another registered name, or 'cmd:<shell command>'."""
    if spec.startswith("cmd:"):
        command = spec[4:].strip()
        if not command:
            raise A2RLError("--agent cmd: needs a command", "e.g. --agent cmd:'./my_agent.sh'")
        return CommandAgent(command)
    return agent_class(spec)()
