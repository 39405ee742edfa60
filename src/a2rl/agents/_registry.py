"""Agent registry. Adding an agent = one module + one line in BUILTIN_AGENTS (or an entry point)."""

from __future__ import annotations

from a2rl._errors import A2RLError
from a2rl._plugins import load, registered
from a2rl.agents._agent import Agent, CommandAgent

BUILTIN_AGENTS: dict[str, str] = {
    "reference": "a2rl.agents.reference:ReferenceAgent",
    "claude-code": "a2rl.agents.claude_code:ClaudeCodeAgent",
    "codex": "a2rl.agents.codex:CodexAgent",
    "opencode": "a2rl.agents.opencode:OpenCodeAgent",
    "gemini": "a2rl.agents.gemini:GeminiAgent",
    "openhands": "a2rl.agents.openhands:OpenHandsAgent",
}
DEFAULT_AGENT = "reference"


def _all_agents() -> dict[str, str]:
    return registered(BUILTIN_AGENTS, "a2rl.agents")


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
    cls = load(agents[spec])
    return cls()  # type: ignore[no-any-return]
