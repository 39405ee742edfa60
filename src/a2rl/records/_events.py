"""Event logs of a run: the agent's normalised events and the programs it ran."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

EventKind = Literal["turn", "tool_call", "command", "file_edit", "usage", "message"]


class AgentEvent(BaseModel):
    """One line of agent/events.jsonl: the contract between agent launchers (and importers)
    and the analysis."""

    # from_attributes: events made by the launchers' own copy of this class validate too.
    model_config = ConfigDict(from_attributes=True)

    kind: EventKind
    """What happened: a model turn, a tool call, a shell command, a file edit, token usage or a
    message."""
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
    """Exit status of a command (None: unknown or still running)."""
    path: str | None = None
    """File written or edited (file_edit), relative to the workspace."""
    text: str | None = None
    """Short text (message): what the model said, truncated; secrets scrubbed by the launcher."""
    input_tokens: int | None = None
    """Prompt tokens of a model response (usage)."""
    output_tokens: int | None = None
    """Completion tokens of a model response (usage)."""
    cost_usd: float | None = None
    """Cost the CLI reported (usage)."""
    extra: dict[str, str] = Field(default_factory=dict)
    """Launcher-specific details (e.g. the CLI's own event type)."""


class ExecEvent(BaseModel):
    """One line of `agent/exec.jsonl`: one process image the agent started."""

    model_config = ConfigDict(from_attributes=True)

    pid: int
    """Process id inside the sandbox's PID namespace."""
    start_s: float
    """Seconds after the agent started when the program was exec'd."""
    end_s: float | None
    """When the process ended (None: still running when the trace stopped)."""
    exit_code: int | None
    """Exit status; negative = killed by that signal number."""
    program: str
    """Path of the executable."""
    argv: list[str]
    """Its arguments, argv[0] included."""
