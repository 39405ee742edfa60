"""The normalised agent event log (`agent/events.jsonl`): the contract between agent launchers
and the analysis. A launcher for an LLM CLI (Claude Code, Codex, …) converts the CLI's native
stream into these records; the analysis labels each turn with a phase from them."""

from __future__ import annotations

from pydantic import BaseModel

# The records live in a2rl.records (one place for every persisted format); the launchers and
# their parsers use them from here.
from a2rl.records import AgentEvent, EventKind, ParseReport

__all__ = ["AgentEvent", "EventKind", "ParseReport", "ParseResult"]


class ParseResult(BaseModel):
    """A parser's output: the normalised events and the report on what it read."""

    events: list[AgentEvent]
    """The normalised events, in transcript order."""
    report: ParseReport
    """What could and could not be read."""
