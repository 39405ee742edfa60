"""Reading a CLI's transcript: what every launcher's `parse_events` has in common.

A transcript is the CLI's stdout/stderr (`agent/transcript.log`) with the arrival time of each
line (`agent/transcript.times`), or a transcript another harness stored (`read_lines`; e.g.
PostTrainBench's, every line prefixed with `[ISO-time] `). The CLIs print JSON event lines
mixed with plain log lines; `TranscriptReader` yields the JSON objects (one per line, or
pretty-printed over several lines) and counts what it cannot read in a `ParseReport`; each
launcher walks the objects with its own rules, collecting `AgentEvent`s into an
`EventCollector`, and `finish_report` turns the counts into warnings. `CLIAgent.write_events`
writes the events to agent/events.jsonl and the report to agent/parse_report.json.

Text a transcript hands on to an event (a tool's output, a prompt) goes through `clean_text`
(no lone surrogates, key-shaped tokens redacted) and is capped head-and-tail (`cap_text`,
`set_output`), so one huge output cannot blow up the event log.
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
from a2rl.schema import OUTPUT_CAP

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
    line at U+2028/U+2029 or \x1c-\x1e (Node prints them unescaped), and the file is decoded
    without newline translation (a progress bar's bare \r is no line end either). The file is
    read a line at a time (a binary file splits at b"\n" only): only the lines' text is held,
    never the whole file's bytes and its decoded copy besides."""
    times = times or []
    out: list[tuple[float, str]] = []
    with path.open("rb") as fh:
        for i, raw in enumerate(fh):
            line = raw.decode("utf-8", "replace").removesuffix("\n").removesuffix("\r")
            out.append((float(times[i]) if i < len(times) else 0.0, line))
    return out


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
    in two: they are written as escapes (still the same JSON). A lone surrogate (what a JSON
    `\\ud800` escape in a transcript decodes to) cannot be written as UTF-8: it is replaced."""
    try:
        text = record.model_dump_json()
    except ValueError:  # PydanticSerializationError: a string no UTF-8 writer takes
        text = type(record).model_validate(_clean_strings(record.model_dump())).model_dump_json()
    for raw, escaped in _LINE_BREAKS.items():
        text = text.replace(raw, escaped)
    return text + "\n"


def write_jsonl(path: Path, records: Iterable[BaseModel]) -> None:
    """`records` as JSONL lines (`jsonl_line`), written one at a time: a transcript's events
    are as large as the transcript, and never held twice (a list of lines and their join)."""
    with path.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(jsonl_line(record))


def _clean_strings(value: Any) -> Any:
    if isinstance(value, str):
        return _no_surrogates(value)
    if isinstance(value, dict):
        return {_clean_strings(k): _clean_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_strings(v) for v in value]
    return value


def _no_surrogates(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


PROMPT_CAP = 65536
"""Most characters of a prompt kept in a `prompt` event (head and tail kept)."""
_KEY_SHAPES = re.compile(
    r"\b(?:sk-ant-[A-Za-z0-9_-]{20,}|sk-(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_-]{32,}"
    r"|AIza[0-9A-Za-z_-]{35}|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,}"
    r"|hf_[A-Za-z0-9]{34,})")
"""API keys by their providers' published shapes (Anthropic, OpenAI, OpenRouter, Google,
GitHub, Hugging Face): redacted from tool outputs and prompts even where a2rl never knew the
value (an imported transcript, a key the agent found on disk and printed)."""
_KEY_PREFIXES = ("sk-", "AIza", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "hf_")
"""What every key shape starts with: text holding none of them is not searched."""


def clean_text(text: str) -> str:
    """`text` fit for an event: lone surrogates replaced (they cannot be written as UTF-8)
    and key-shaped tokens redacted. Secret values a2rl handed the agent never reach a
    transcript (the supervisor scrubs each line as it is written)."""
    from a2rl._secrets import REDACTED

    text = _no_surrogates(text)
    if not any(prefix in text for prefix in _KEY_PREFIXES):
        return text
    return _KEY_SHAPES.sub(REDACTED, text)


def cap_text(text: str, cap: int = OUTPUT_CAP) -> tuple[str, int | None]:
    """(`text` cut to at most `cap` characters, its full length or None when uncut). The head
    and the tail are kept (a listing starts at the top, a traceback ends at the bottom) around
    a marker saying how much was cut."""
    if len(text) <= cap:
        return text, None
    marker = f"\n[… {len(text)} characters in all; the middle is cut …]\n"
    keep = max(0, cap - len(marker))
    tail = keep // 2
    return text[:keep - tail] + marker + (text[-tail:] if tail else ""), len(text)


def set_output(event: AgentEvent, text: object, is_error: bool | None = None) -> AgentEvent:
    """Give a tool call its output (cleaned and capped, see `cap_text`) and whether the tool
    reported an error; None `text` leaves the output unknown."""
    if text is not None:
        event.output, event.output_chars = cap_text(clean_text(
            text if isinstance(text, str) else str(text)))
    if is_error is not None:
        event.is_error = is_error
    return event


def tool_args(args: object, cap: int = 2000) -> dict[str, str]:
    """extra["args"] of a tool call: its arguments as compact JSON (cleaned, capped), or
    nothing when it has none."""
    if args in (None, "", {}, []):
        return {}
    try:
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False,
                                                              default=str)
    except ValueError:  # a circular structure cannot come from JSON; be safe all the same
        text = str(args)
    return {"args": cap_text(clean_text(text), cap)[0]}


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


# ---- what the agent was told -----------------------------------------------------------------
PROMPT_FILE = "prompt.md"
"""agent/prompt.md: the first prompt the agent received (outside the workspace): whole, unless
it passed the ~60 KB a session note carries (`a2rl.agents._cli_session.fitted`)."""


def session_prompts(lines: Iterable[tuple[float, str]]) -> list[tuple[float, int, str]]:
    """(time, round, prompt) of each CLI round a2rl's session started with a prompt it noted
    in the transcript (`a2rl.agents._cli_session`: the first prompt, then each re-prompt)."""
    found: list[tuple[float, int, str]] = []
    for t, line in lines:
        text = strip_stamp(line)[1].strip()
        if not text.startswith('{"' + HARNESS_KEY + '"'):
            continue
        try:
            note = json.loads(text)[HARNESS_KEY]
        except (ValueError, KeyError, TypeError):
            continue
        if isinstance(note, dict) and note.get("event") == "round_start" and \
                isinstance(note.get("prompt"), str) and isinstance(note.get("round"), int):
            found.append((t, note["round"], note["prompt"]))
    return found


def prompt_event(text: str, t: float = 0.0, turn: int = 0, **extra: str) -> AgentEvent:
    """A `prompt` event: a message the agent received (cleaned, capped at PROMPT_CAP;
    extra["chars"]: its full length when cut)."""
    body, full = cap_text(clean_text(text), PROMPT_CAP)
    return AgentEvent(kind="prompt", turn=turn, t_s=t, text=body,
                      extra={**extra, **({"chars": str(full)} if full else {})})


def with_prompts(events: list[AgentEvent], lines: Iterable[tuple[float, str]],
                 first: str | None = None) -> list[AgentEvent]:
    """`events` with the prompts the agent received: the first one (`first`, else the one the
    session noted for round 0) at time 0 in turn 0, and each re-prompt the session noted
    before the first model turn that followed it (in that turn; after the last event, in a
    turn of its own, when no turn followed)."""
    noted = session_prompts(lines)
    if first is None:
        first = next((p for _, n, p in noted if n == 0), None)
    out = list(events)
    for t, n, text in sorted((x for x in noted if x[1] > 0), key=lambda x: x[0]):
        at = next((i for i, e in enumerate(out) if e.kind == "turn" and e.t_s >= t), None)
        if at is None:
            turn = max((e.turn for e in out), default=-1) + 1
            out.append(prompt_event(text, t, turn, round=str(n), source="re-prompt"))
        else:
            out.insert(at, prompt_event(text, t, out[at].turn, round=str(n), source="re-prompt"))
    if first is not None:
        out.insert(0, prompt_event(first, source="first prompt"))
    return out


# ---- a plain log (a `cmd:` agent's, the reference agent's) -----------------------------------
LOG_BLOCK_GAP_S = 2.0
"""A pause after which the next log line starts a new block."""
LOG_BLOCK_SPAN_S = 5.0
"""The longest a block lasts from its first line: a steady log is cut into blocks this long,
each at the time of its own first line."""
LOG_BLOCK_LINES = 40
LOG_LINE_CHARS = 1000


def log_events(lines: Iterable[tuple[float, str]], breaks: Iterable[float] = ()
               ) -> list[AgentEvent]:
    """A plain log as `message` events, one per block of lines written close together
    (within LOG_BLOCK_GAP_S of the previous line and LOG_BLOCK_SPAN_S of the block's first,
    at most LOG_BLOCK_LINES lines), each at the time its first line arrived (`end_s`: its
    last line's). A block never spans one of `breaks` (e.g. the submissions' times), so a
    timeline puts each block on the right side of them. Lines are cleaned and cut at
    LOG_LINE_CHARS; extra: source="log", lines=<count>, times=<each line's time, space
    separated>. For an agent without a parsed transcript (a `cmd:` agent, the reference
    agent): a viewer's or an export's reading of its log, never written to agent/events.jsonl
    (which holds model turns, and whose presence the analysis reads as "the agent has
    them")."""
    cuts = sorted(breaks)
    blocks: list[tuple[float, list[float], list[str]]] = []  # (start, line times, lines)
    for t, raw in lines:
        line = raw.split("\r")[-1]  # a progress bar redrawn with \r: its last state
        if not line.strip():
            continue
        t = max(0.0, t)
        if blocks:
            start, times, block = blocks[-1]
            new = (any(times[-1] < b <= t for b in cuts) or t - times[-1] > LOG_BLOCK_GAP_S
                   or t - start > LOG_BLOCK_SPAN_S or len(block) >= LOG_BLOCK_LINES)
        if not blocks or new:
            blocks.append((t, [], []))
        blocks[-1][1].append(t)
        blocks[-1][2].append(cap_text(clean_text(line), LOG_LINE_CHARS)[0])
    return [AgentEvent(kind="message", turn=0, t_s=round(start, 3), end_s=round(times[-1], 3),
                       text="\n".join(block),
                       extra={"source": "log", "lines": str(len(block)),
                              "times": " ".join(f"{x:.3f}" for x in times)})
            for start, times, block in blocks]


def read_log_events(agent_dir: Path, breaks: Iterable[float] = ()) -> list[AgentEvent]:
    """`log_events` of agent/transcript.log with the arrival times in transcript.times."""
    if not (agent_dir / "transcript.log").is_file():
        return []
    return log_events(read_transcript(agent_dir), breaks)
