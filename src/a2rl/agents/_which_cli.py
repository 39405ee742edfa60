"""Which CLI wrote a transcript, from the shape of its events (for transcripts another harness
stored, whose agent name may be missing or ambiguous: `claude_reprompt`, `codex_xhigh`, …)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from a2rl.agents._events import ParseReport
from a2rl.agents._stream import TranscriptReader

SAMPLE_OBJECTS = 400
"""JSON objects looked at (the shapes show from the first events on)."""


def _vote(obj: dict[str, Any]) -> str | None:
    kind = obj.get("type")
    if isinstance(obj.get("msg"), dict) or isinstance(obj.get("payload"), dict) and kind in (
            "session_meta", "response_item", "event_msg", "turn_context") or kind in (
            "thread.started", "turn.started",
                                                    "turn.completed", "turn.failed",
                                                    "item.started", "item.completed"):
        return "codex"
    if kind in ("step_start", "step_finish") or (isinstance(obj.get("part"), dict)
                                                 and "sessionID" in obj):
        return "opencode"
    if isinstance(obj.get("kind"), str) and obj["kind"].endswith(("Event", "Observation")) \
            or "a2rl_openhands_usage" in obj:
        return "openhands"
    if kind in ("tool_use", "tool_result") and "tool_id" in obj or \
            kind == "message" and "role" in obj or kind == "init" and "session_id" in obj:
        return "gemini"
    if kind in ("assistant", "user", "stream_event") and ("message" in obj or "event" in obj) \
            or kind == "system" and "subtype" in obj or kind == "result" and "session_id" in obj:
        return "claude-code"
    return None


def detect_cli(lines: Iterable[tuple[float, str]]) -> str | None:
    """The a2rl agent name (claude-code, codex, gemini, opencode, openhands) whose stream
    format the transcript has, or None when no JSON event of a known CLI is in it."""
    votes: Counter[str] = Counter()
    for i, (_, obj) in enumerate(TranscriptReader(lines, ParseReport()).objects()):
        if i >= SAMPLE_OBJECTS:
            break
        if (name := _vote(obj)) is not None:
            votes[name] += 1
    return votes.most_common(1)[0][0] if votes else None
