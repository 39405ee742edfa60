"""The normalised agent event log (`agent/events.jsonl`): the contract between agent launchers
and the analysis. A launcher for an LLM CLI (Claude Code, Codex, …) converts the CLI's native
stream into these records; the analysis labels each turn with a phase from them."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

# The records live in a2rl.schema (one place for every persisted format); the launchers and
# their parsers use them from here.
from a2rl.schema import AgentEvent, EventKind, ParseReport

__all__ = ["AgentEvent", "EventKind", "ParseReport", "ParseResult", "usage_totals"]


class ParseResult(BaseModel):
    """A parser's output: the normalised events and the report on what it read."""

    events: list[AgentEvent]
    """The normalised events, in transcript order."""
    report: ParseReport
    """What could and could not be read."""


def usage_totals(events: Iterable[AgentEvent]) -> tuple[int, int, float | None]:
    """(input tokens, output tokens, USD) over the `usage` events of a run: every model the
    CLI called, the CLI's own totals where it reports them (each launcher's parser makes its
    usage events sum to those: Claude Code's `result` events, Codex's cumulative
    `turn.completed`, OpenCode's `step_finish` parts, Gemini CLI's `result` stats, the
    OpenHands SDK's persisted metrics). USD is None when no event carries a cost (Codex and
    Gemini CLI report none): a price table, not this sum, must then say what it cost."""
    tok_in = tok_out = 0
    usd: float | None = None
    for e in events:
        if e.kind != "usage":
            continue
        tok_in += e.input_tokens or 0
        tok_out += e.output_tokens or 0
        if e.cost_usd is not None:
            usd = (usd or 0.0) + e.cost_usd
    return tok_in, tok_out, None if usd is None else round(usd, 6)
