"""Reading a CLI's transcript: what every launcher's `parse_events` has in common.

A transcript is the CLI's stdout/stderr (`agent/transcript.log`) with the arrival time of each
line (`agent/transcript.times`), or a transcript another harness stored (`read_lines`; e.g.
PostTrainBench's, every line prefixed with `[ISO-time] `). The CLIs print JSON event lines
mixed with plain log lines; `TranscriptReader` yields the JSON objects (one per line, or
pretty-printed over several lines) and counts what it cannot read in a `ParseReport`; each
launcher walks the objects with its own rules, collecting `AgentEvent`s into an
`EventCollector`, and `finish_report` turns the counts into warnings. `CLIAgent.write_events`
writes the events to agent/events.jsonl and the report to agent/parse_report.json.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from a2rl.agents._events import AgentEvent, EventKind, ParseReport, ParseResult

HARNESS_KEY = "a2rl_session"
"""The key of a2rl's own transcript lines (`a2rl.agents._cli_session.note`)."""
PARSE_REPORT = "parse_report.json"
"""Beside agent/events.jsonl: the parser's `ParseReport` (what it could not read)."""
WORKSPACE_MARKER = "/workspace/"
"""Every a2rl workspace is a folder named `workspace` (single task and multi root alike)."""


def read_lines(path: Path, times: list[str] | None = None) -> list[tuple[float, str]]:
    """(time, line) for each line of a transcript file: the times given (seconds since the
    agent started, one per line), else 0.0, so that a `[ISO-time] ` prefix or the events'
    own timestamps give the time (a transcript another harness wrote). Lines are split on
    "\n" only, as the supervisor timed them: str.splitlines would also split inside a JSON
    line at U+2028/U+2029 or \x1c-\x1e (Node prints them unescaped)."""
    lines = path.read_text(errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    times = times or []
    return [(float(times[i]) if i < len(times) else 0.0, line.removesuffix("\r"))
            for i, line in enumerate(lines)]


def read_transcript(agent_dir: Path) -> list[tuple[float, str]]:
    """(seconds since the agent started, line) for each line of agent/transcript.log. The
    times come from `transcript.times`, written beside it by the supervisor (0.0 when
    absent)."""
    times_path = agent_dir / "transcript.times"
    return read_lines(agent_dir / "transcript.log",
                      times_path.read_text().split() if times_path.exists() else None)


def read_parse_report(agent_dir: Path) -> ParseReport | None:
    """agent/parse_report.json (what the transcript parser could not read), or None for runs
    made before it existed or by agents without a parser."""
    path = agent_dir / PARSE_REPORT
    if not path.exists():
        return None
    return ParseReport.model_validate_json(path.read_text())


_STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?"
                    r"(?:Z|[+-]\d{2}:?\d{2})?)\] ?")
"""A per-line time prefix, `[2026-04-02T10:11:12.123Z] ` (how PostTrainBench stores
transcripts; other harnesses write the same with a space or without a zone)."""
MARKERS = frozenset({"--JSON Event--"})
"""Lines that announce the next (pretty-printed) JSON object: OpenHands 1.8–1.15 `--json`."""
MAX_OBJECT_LINES = 20000
"""Longest pretty-printed object read (an unclosed `{` would otherwise swallow the rest)."""
SAMPLES = 5
SAMPLE_CHARS = 200


_LINE_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


def jsonl_line(record: BaseModel) -> str:
    """One JSONL line of a record. JSON leaves U+2028, U+2029 and U+0085 unescaped, but
    str.splitlines breaks lines at them, so readers that split with it would cut a record
    in two: they are written as escapes (still the same JSON)."""
    text = record.model_dump_json()
    for raw, escaped in _LINE_BREAKS.items():
        text = text.replace(raw, escaped)
    return text + "\n"


def parse_stamp(text: str) -> float | None:
    """Seconds since the epoch of an ISO time (`Z`, an offset or none = UTC), or None."""
    text = text.replace(",", ".").replace(" ", "T", 1)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def strip_stamp(line: str) -> tuple[float | None, str]:
    """(epoch seconds of the line's `[ISO-time] ` prefix or None, the line without it)."""
    match = _STAMP.match(line)
    if match is None:
        return None, line
    return parse_stamp(match.group(1)), line[match.end():]


class TranscriptReader:
    """The JSON objects of a transcript, with what could not be read counted in `report`.

    CLIs mix JSON event lines with plain log lines. Read here: one JSON object per line; a
    pretty-printed object over several lines (a line that is just `{`, or the object after an
    OpenHands `--JSON Event--` marker); either with a `[ISO-time] ` prefix on every line, whose
    time is used when the transcript has no arrival times of its own (all 0.0). A line that
    starts with `{` but does not decode is counted (`unparsed_lines`) with a few samples;
    parsers count JSON events of a type they do not know with `unknown`."""

    def __init__(self, lines: Iterable[tuple[float, str]], report: ParseReport, *,
                 harness: bool = False) -> None:
        self.harness = harness
        """Yield a2rl's own session lines too (a parser that tells rounds apart by them)."""
        self.lines = list(lines)
        self.report = report
        report.lines = len(self.lines)
        self.has_times = any(t for t, _ in self.lines)
        self.stamped = False
        """Whether the object last yielded had a time prefix (it then gives the time)."""
        self.t0: float | None = None
        self.last_time: float | None = None
        """Epoch time of the first time-stamped line (time 0 when the transcript has none)."""

    def unknown(self, kind: object) -> None:
        """A JSON event this parser does not know (counted, skipped)."""
        key = str(kind)[:60]
        self.report.unknown_types[key] = self.report.unknown_types.get(key, 0) + 1

    def unreadable(self, text: str, count: int = 1) -> None:
        self.report.unparsed_lines += count
        if len(self.report.unparsed_samples) < SAMPLES:
            self.report.unparsed_samples.append(text[:SAMPLE_CHARS])

    def cli_error(self, text: str) -> None:
        """An error the CLI reported in its stream (kept, truncated, for the report)."""
        if len(self.report.cli_errors) < 50:
            self.report.cli_errors.append(text[:500])

    def time_of(self, t: float, stamp: float | None) -> float:
        """The time of a line: its arrival time when the transcript has them, else its
        prefix's time since the first prefix (a line without one: the last prefix's)."""
        if self.has_times:
            return t
        if stamp is None:
            return self.last_time if self.last_time is not None else t
        if self.t0 is None:
            self.t0 = stamp
        self.last_time = round(max(0.0, stamp - self.t0), 3)
        return self.last_time

    def event_time(self, t: float, iso: object) -> float:
        """`t`, or, when the transcript has neither arrival times nor a prefix on this line,
        the event's own ISO `timestamp` field relative to the first time seen (OpenHands and
        Gemini CLI stamp their events)."""
        if self.has_times or self.stamped or not isinstance(iso, str):
            return t
        return self.time_of(t, parse_stamp(iso))

    def _line(self, i: int) -> tuple[float, float | None, str]:
        """(arrival time, prefix time, text without the prefix) of line `i`."""
        t, raw = self.lines[i]
        stamp, text = strip_stamp(raw)
        if text is not raw:
            self.report.timestamp_prefixed += 1
        return t, stamp, text

    def _gather(self, first: str, i: int) -> tuple[Any, int]:
        """A pretty-printed object opened by `first`, continued from line `i`: (the object or
        None, index of the line after it). Decoding is tried at each line starting with `}` at
        column 0 (json.dumps(indent=…) closes the top object there)."""
        parts, j, n = [first], i, len(self.lines)
        decoder = json.JSONDecoder()
        while j < n and j - i < MAX_OBJECT_LINES:
            _, _, more = self._line(j)
            if more.strip() in MARKERS:
                break  # the next event begins: this one never closed
            if more and not more[0].isspace() and not more.startswith("}"):
                break  # not pretty JSON (its inner lines are indented): a stray "{" line
            parts.append(more)
            j += 1
            if more.startswith("}"):
                try:
                    obj, _ = decoder.raw_decode("\n".join(parts))
                except json.JSONDecodeError:
                    continue
                return obj, j
        return None, j

    def objects(self) -> Iterator[tuple[float, dict[str, Any]]]:
        """(time, object) for each JSON object of the transcript, in order."""
        i, n, after_marker = 0, len(self.lines), False
        while i < n:
            t, stamp, raw = self._line(i)
            text = raw.strip()
            i += 1
            if text in MARKERS:
                after_marker = True
                continue
            if not text.startswith("{"):
                if text:
                    self.report.text_lines += 1
                    after_marker = False
                continue
            pretty, after_marker = text == "{" or after_marker, False
            obj: Any = None
            try:
                obj = json.loads(text)
            except json.JSONDecodeError:
                if not pretty:
                    self.unreadable(text)
                    continue
                obj, j = self._gather(raw, i)
                if obj is None:  # its lines are counted once, not read again one by one
                    self.unreadable(text + " ...", j - i + 1)
                    i = j
                    continue
                self.report.multiline_objects += 1
                i = j
            self.report.json_objects += 1
            if not isinstance(obj, dict):
                self.unknown(f"<{type(obj).__name__}>")
                continue
            if HARNESS_KEY in obj:
                self.report.harness_lines += 1
                if not self.harness:
                    continue
            self.stamped = stamp is not None
            yield self.time_of(t, stamp), obj


def json_lines(lines: Iterable[tuple[float, str]],
               report: ParseReport | None = None) -> Iterable[tuple[float, dict[str, Any]]]:
    """The JSON objects among transcript lines (see `TranscriptReader`)."""
    return TranscriptReader(lines, report or ParseReport()).objects()


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


def finish_report(report: ParseReport, events: list[AgentEvent]) -> ParseResult:
    """Fill in the report's event count and its warnings (nothing recognised, unreadable
    lines, unknown event types): the loud part of a parse."""
    report.events = len(events)
    if report.lines and not events:
        report.warnings.append(
            f"no events read from {report.lines} transcript lines ({report.json_objects} JSON "
            f"objects, {report.text_lines} plain lines): the stream is not in a format this "
            "parser knows, or the CLI printed nothing but logs")
    if report.unparsed_lines:
        report.warnings.append(f"{report.unparsed_lines} lines looked like JSON but could not "
                               "be read (see unparsed_samples)")
    if report.unknown_types:
        total = sum(report.unknown_types.values())
        names = ", ".join(sorted(report.unknown_types)[:10])
        report.warnings.append(f"{total} JSON events of a type this parser does not know were "
                               f"skipped ({names})")
    return ParseResult(events=events, report=report)


class EventCollector:
    """The events of one parse so far, the current model turn (-1 before the first), and the
    report on what was read (`read` walks the transcript's JSON objects into it)."""

    parser = ""
    """Name of the launcher this parser belongs to (for the report)."""
    harness_lines = False
    """Whether the parser reads a2rl's own session lines (round starts)."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []
        self.turn = -1
        self.report = ParseReport(parser=self.parser)
        self.reader = TranscriptReader([], self.report)

    def read(self, lines: Iterable[tuple[float, str]]) -> Iterator[tuple[float, dict[str, Any]]]:
        self.reader = TranscriptReader(lines, self.report, harness=self.harness_lines)
        return self.reader.objects()

    def add(self, kind: EventKind, t: float, turn: int | None = None,
            **fields: Any) -> AgentEvent:
        """Append an event to the current turn (or to `turn`); events before the first model
        turn belong to turn 0."""
        event = AgentEvent(kind=kind, turn=max(self.turn if turn is None else turn, 0), t_s=t,
                           **fields)
        self.events.append(event)
        return event

    def error(self, t: float, text: str, kind: str) -> AgentEvent:
        """An error the CLI reported: a message event marked extra["error"] = "1" (with its
        type), and a line in the report's cli_errors."""
        self.reader.cli_error(f"{kind}: {text}" if text else kind)
        return self.add("message", t, text=(text or kind)[:500],
                        extra={"error": "1", "type": kind})

    def result(self) -> ParseResult:
        return finish_report(self.report, self.events)
