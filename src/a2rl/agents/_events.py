"""The normalised agent event log (`agent/events.jsonl`): the contract between agent launchers
and the analysis. A launcher for an LLM CLI (Claude Code, Codex, …) converts the CLI's native
stream into these records; the analysis labels each turn with a phase from them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

EventKind = Literal["turn", "tool_call", "command", "file_edit", "usage", "message"]


class AgentEvent(BaseModel):
    """One line of agent/events.jsonl."""

    kind: EventKind
    turn: int
    """Index of the model turn the event belongs to (0-based)."""
    t_s: float
    """Seconds after the agent started."""
    end_s: float | None = None
    """For commands: when they finished."""
    name: str | None = None
    """Tool name (tool_call)."""
    command: str | None = None
    """Shell command line (command)."""
    exit_code: int | None = None
    path: str | None = None
    """File written or edited (file_edit), relative to the workspace."""
    text: str | None = None
    """Short text (message): what the model said, truncated; secrets scrubbed by the launcher."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    extra: dict[str, str] = Field(default_factory=dict)
