"""Reading a CLI's transcript: what every launcher's `parse_events` has in common.

A transcript is the CLI's stdout/stderr (`agent/transcript.log`) with the arrival time of each
line (`agent/transcript.times`). The CLIs print JSON event lines mixed with plain log lines;
each launcher walks the JSON objects with its own rules, collecting `AgentEvent`s into an
`EventCollector`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from a2rl.agents._events import AgentEvent, EventKind

WORKSPACE_MARKER = "/workspace/"
"""Every a2rl workspace is a folder named `workspace` (single task and multi root alike)."""


def read_transcript(agent_dir: Path) -> Iterable[tuple[float, str]]:
    """(seconds since the agent started, line) for each line of the transcript. The times come
    from `transcript.times`, written beside it by the supervisor (0.0 when absent)."""
    text = (agent_dir / "transcript.log").read_text(errors="replace")
    times_path = agent_dir / "transcript.times"
    times = times_path.read_text().split() if times_path.exists() else []
    for i, line in enumerate(text.splitlines()):
        yield (float(times[i]) if i < len(times) else 0.0), line


def json_lines(lines: Iterable[tuple[float, str]]) -> Iterable[tuple[float, dict[str, Any]]]:
    """The JSON objects among transcript lines (CLIs mix them with plain log lines)."""
    for t, line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield t, obj


def as_int(value: Any) -> int:
    """A token count from a CLI's JSON: the integer, or 0 for anything else (missing, null,
    a string, a float, a bool — JSON `true` is an int to Python and must not count as 1)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def relative_path(path: str, roots: Iterable[str | None] = (), *,
                  by_marker: bool = False) -> str:
    """`path` relative to the first of `roots` (absolute folders, e.g. the CLI's working
    directory) that contains it; with `by_marker`, else relative to the last `/workspace/` in
    it. Any other path is returned unchanged (an edit outside the workspace stays visible)."""
    for root in roots:
        root = (root or "").rstrip("/")
        if root and path.startswith(root + "/"):
            return path[len(root) + 1:]
    if by_marker and WORKSPACE_MARKER in path:
        return path.rsplit(WORKSPACE_MARKER, 1)[1]
    return path


class EventCollector:
    """The events of one parse so far and the current model turn (-1 before the first)."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []
        self.turn = -1

    def add(self, kind: EventKind, t: float, turn: int | None = None,
            **fields: Any) -> AgentEvent:
        """Append an event to the current turn (or to `turn`); events before the first model
        turn belong to turn 0."""
        event = AgentEvent(kind=kind, turn=max(self.turn if turn is None else turn, 0), t_s=t,
                           **fields)
        self.events.append(event)
        return event
