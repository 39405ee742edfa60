"""Event logs of a run: the agent's normalised events and the programs it ran."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from a2rl.schema._base import Record

EventKind = Literal["turn", "tool_call", "command", "file_edit", "usage", "message", "prompt"]
"""`prompt`: a message the agent received (the first prompt, a re-prompt): `text` holds it
(extra: source = "first prompt" | "re-prompt", round, chars = its full length when cut). The
first is at 0 s in turn 0 (kept whole in agent/prompt.md); a re-prompt comes before the turn it
started. A `cmd:` or reference agent receives no prompt (it reads workspace/instructions.md,
which the code snapshots keep) and has no event log."""

OUTPUT_CAP = 16384
"""Most characters of a tool's output kept in an event (head and tail kept, the middle cut)."""


class AgentEvent(Record):
    """One line of agent/events.jsonl."""


    kind: EventKind
    """What happened: a model turn, a tool call, a shell command, a file edit, token usage,
    or a message (model text, or an error the CLI reported: extra["error"] = "1")."""
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
    """For commands: the exit status (None while unknown, e.g. still running or killed)."""
    path: str | None = None
    """File written or edited (file_edit), relative to the workspace."""
    text: str | None = None
    """Short text (message): what the model said, truncated; secrets scrubbed by the launcher."""
    input_tokens: int | None = None
    """For usage: prompt tokens (cached ones included). May be negative on a correction event
    that brings a round's stream total down to the CLI's own total."""
    output_tokens: int | None = None
    """For usage: completion tokens (reasoning included)."""
    main_input_tokens: int | None = None
    """For usage: the part of input_tokens that counts for the main model alone (the CLI's own
    agent loop on the driver, as Claude Code's `result` event `usage` counts it: no side calls
    of a small model, no subagents). Summed over the events it is the main model's total, as
    input_tokens sums to every model's. None where the launcher does not tell them apart."""
    main_output_tokens: int | None = None
    """For usage: the part of output_tokens that counts for the main model alone (see
    main_input_tokens)."""
    cost_usd: float | None = None
    """For usage: the CLI's cost estimate in USD, when it reports one."""
    output: str | None = None
    """For tool_call: what the tool returned (stdout/stderr, the file it read, the grader's
    reply), at most OUTPUT_CAP characters; secrets scrubbed by the launcher. A shell call's
    output is on its tool_call event (the command event right after it has the exit code);
    None: no result seen (still running, killed)."""
    output_chars: int | None = None
    """The full output's length in characters, when `output` was cut to OUTPUT_CAP."""
    is_error: bool | None = None
    """For tool_call and command: the tool reported an error (None: not known)."""
    extra: dict[str, str] = Field(default_factory=dict)
    """Launcher-specific details (status, error type, cache split, …)."""


class ExecEvent(Record):
    """One line of `agent/exec.jsonl`: one process image the agent started."""


    pid: int
    """Process id as the tracer (outside the sandbox) sees it."""
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


class ParseReport(Record):
    """What a transcript parser could and could not read (`agent/parse_report.json`): a
    parser never fails silently; lines it cannot read are counted here, with a few samples."""

    version: int = 1
    """Format version of this record."""
    parser: str = ""
    """The launcher whose parser read the transcript (claude-code, codex, …)."""
    lines: int = 0
    """Physical lines in the transcript."""
    json_objects: int = 0
    """JSON objects read (one per line, or spread over several lines when pretty-printed)."""
    multiline_objects: int = 0
    """Of `json_objects`, those pretty-printed over several lines (OpenHands `--JSON Event--`)."""
    timestamp_prefixed: int = 0
    """Lines that carried a `[ISO-time] ` prefix (PostTrainBench's transcripts), stripped."""
    harness_lines: int = 0
    """a2rl's own lines in the transcript (`{"a2rl_session": …}`: round starts), not the CLI's."""
    text_lines: int = 0
    """Plain non-JSON lines (the CLI's own log and warnings on stderr): expected, not errors."""
    unparsed_lines: int = 0
    """Lines that looked like JSON (start with `{`) but could not be decoded."""
    unparsed_samples: list[str] = Field(default_factory=list)
    """The first few unreadable lines (truncated), to see what went wrong."""
    unknown_types: dict[str, int] = Field(default_factory=dict)
    """JSON events of a type the parser does not know → how many (skipped)."""
    events: int = 0
    """AgentEvents written to agent/events.jsonl."""
    cli_errors: list[str] = Field(default_factory=list)
    """Errors the CLI itself reported in its stream (loop detected, turn limit, API errors)."""
    warnings: list[str] = Field(default_factory=list)
    """Human-readable problems of this parse (unreadable lines, nothing recognised, usage
    corrections): analysis.json shows them."""
