"""`a2rl runs tail`: a run followed from its files while it goes, one line per thing that
happened, until its record is closed.

Each poll reads only what the run's files gained: the grader's ledger (each state change of a
submission, its score and interval), run.json (the run's stage), the agent's events (its
turns and tool calls, parsed from the CLI's transcript so far; the output lines of an agent
without a parser), the programs it started (the raw exec trace) and the phase it is in (as the
analysis labels it). Everything in these files but the ledger and run.json is the agent's: it
is printed through `safe()`, one line per item, cut to a width.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from a2rl._console import clock, plain_text, safe

if TYPE_CHECKING:
    from a2rl.agents import Agent
    from a2rl.capture import ExecLogReader
    from a2rl.schema import AgentEvent, ExecEvent, RunRecord, SubmissionRecord

_WIDTH = 160
"""Most characters of agent text on one line."""
_PHASE_DUTY = 0.1
"""The largest share of one core the phase reading may take (it reads the workspace)."""


def _cut(text: str, width: int = _WIDTH) -> str:
    one = " ".join(plain_text(text).split())
    return one if len(one) <= width else one[:width - 1] + "…"


class LineTail:
    """The complete lines appended to a file since the last read (a line still being written
    waits for its end)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._rest = b""

    def new_lines(self, max_bytes: int = 16 << 20) -> list[str]:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self._offset)
                data = fh.read(max_bytes)
        except OSError:
            return []
        self._offset += len(data)
        data = self._rest + data
        cut = data.rfind(b"\n") + 1
        self._rest = data[cut:]
        return data[:cut].decode(errors="replace").split("\n")[:-1]


@dataclass
class Line:
    """One printed line: when it happened on the agent's clock (None: before the agent, or
    not known) and its text (rich markup; agent text already made safe)."""

    at_s: float | None
    text: str


@dataclass
class RunFollower:
    """Reads a run directory's growing files; `poll()` gives the lines for what is new."""

    run_dir: Path
    record: RunRecord
    agent: Agent | None = None
    now: Callable[[], float] = time.time
    _ledger: LineTail = field(init=False)
    _transcript: LineTail = field(init=False)
    _events_seen: int = field(init=False, default=0)
    _execs_seen: set[tuple[int, float]] = field(init=False, default_factory=set)
    _trace: ExecLogReader | None = field(init=False, default=None)
    _phase: str | None = field(init=False, default=None)
    _phase_next: float = field(init=False, default=0.0)
    _status: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._ledger = LineTail(self.run_dir / "ledger.jsonl")
        self._transcript = LineTail(self.run_dir / "agent" / "transcript.log")

    @property
    def t0(self) -> float | None:
        started = self.record.agent_started_at
        return started.timestamp() if started is not None else None

    def _agent_s(self, epoch: float) -> float | None:
        return None if self.t0 is None else epoch - self.t0

    def poll(self) -> list[Line]:
        """What happened since the last poll, in order of time."""
        from a2rl.schema import load_run

        try:
            self.record = load_run(self.run_dir)
        except Exception:  # noqa: BLE001 - run.json is replaced atomically; a reader may race it
            pass
        lines = [*self._stage(), *self._submissions()]
        if self.t0 is not None:
            lines += [*self._agent_events(), *self._programs_and_phase()]
        return sorted(lines, key=lambda line: -1.0 if line.at_s is None else line.at_s)

    @property
    def closed(self) -> bool:
        return self.record.ended_at is not None

    def _stage(self) -> Iterator[Line]:
        r = self.record
        if r.status == self._status:
            return
        self._status = r.status
        if r.status == "setting_up":
            yield Line(None, f"run {safe(r.run_id)}: setting up ({safe(r.config.task)}, "
                       f"agent {safe(_cut(r.config.agent, 60))})")
        elif r.status == "running":
            base = r.baseline
            said = (f"baseline {base.score:.2f} on {base.n_items} items; " if base is not None
                    and base.score == base.score else "")
            yield Line(0.0, f"{said}agent started (budget {clock(r.config.budget_s)})")

    def _submissions(self) -> Iterator[Line]:
        from pydantic import ValidationError

        from a2rl.schema import SubmissionRecord

        for raw in self._ledger.new_lines():
            if not raw.strip():
                continue
            try:
                sub = SubmissionRecord.model_validate_json(raw)
            except ValidationError:
                continue
            when = sub.finished_at or sub.received_at
            yield Line(self._agent_s(when.timestamp()), submission_line(sub))

    def _agent_events(self) -> Iterator[Line]:
        """The agent's turns and tool calls (a parser's events so far), else its output."""
        events = self._events()
        if events is None:
            for raw in self._transcript.new_lines():
                if raw.strip():
                    yield Line(self._agent_s(self.now()), f"[dim]out[/]   {safe(_cut(raw))}")
            return
        for ev in events[self._events_seen:]:
            if (text := event_line(ev)) is not None:
                yield Line(ev.t_s, text)
        self._events_seen = max(self._events_seen, len(events))

    def _events(self) -> list[AgentEvent] | None:
        from a2rl.schema import AgentEvent, read_jsonl

        written = self.run_dir / "agent" / "events.jsonl"
        if self.closed and written.is_file():
            return read_jsonl(written, AgentEvent)
        if self.agent is None:
            return None
        try:
            return self.agent.live_events(self.run_dir / "agent")
        except Exception:  # noqa: BLE001 - a transcript mid-write: read again at the next poll
            return [] if self._events_seen else None

    def _programs_and_phase(self) -> Iterator[Line]:
        from a2rl.capture import ExecLogReader

        assert self.t0 is not None
        raw = self.run_dir / "agent" / "exec.log"
        if raw.is_file() and self._trace is None:
            self._trace = ExecLogReader(self.t0, hide=_sandbox_programs(self.record))
        if self._trace is not None:
            for ev in self._trace.poll(raw):
                key = (ev.pid, ev.start_s)
                if key not in self._execs_seen:
                    self._execs_seen.add(key)
                    yield Line(ev.start_s, program_line(ev))
        if self.now() >= self._phase_next or self.closed:
            yield from self._phase_change()

    def _phase_change(self) -> Iterator[Line]:
        from a2rl.analysis import phase_so_far

        assert self.t0 is not None
        began = time.monotonic()
        now_s = self.now() - self.t0
        if self.record.timings.agent_s:
            now_s = min(now_s, self.record.timings.agent_s)
        events = None
        if self._trace is None and self.agent is not None:
            try:
                events = self.agent.live_events(self.run_dir / "agent")
            except Exception:  # noqa: BLE001 - read again at the next poll
                events = None
        if self._trace is None and not events:
            return
        try:
            found = phase_so_far(self.run_dir, now_s, exec_t0=self.t0 if self._trace else None,
                                 agent_events=events, trace=self._trace)
        except Exception:  # noqa: BLE001 - the phase is a diagnostic: the tail goes on
            found = None
        self._phase_next = self.now() + (time.monotonic() - began) / _PHASE_DUTY
        if found is not None and found.phase != self._phase:
            self._phase = found.phase
            yield Line(found.since_s, f"[magenta]phase[/] {safe(found.phase)} (index "
                       f"{found.index}, from {found.source})")


def _sandbox_programs(record: RunRecord) -> list[list[str]]:
    """The sandbox's own programs in the trace (bwrap, the network bridge), not the agent's."""
    import sys

    from a2rl.sandbox import BRIDGE_CODE

    hide = [[sys.executable, "-c", BRIDGE_CODE]]
    if record.sandboxed and record.config.sandbox == "bwrap":
        import shutil

        hide.append([shutil.which("bwrap") or "bwrap"])
    return hide


def submission_line(sub: SubmissionRecord) -> str:
    """One state change of a submission: its status, score with interval, gain and whether
    the gain is beyond noise."""
    head = f"[bold]{safe(sub.id)}[/] {safe(sub.status)}"
    if sub.status == "pending":
        return f"{head} {safe(_cut(sub.model_path, 80))} (received, being evaluated)"
    if sub.score is None:
        return f"{head}: {safe(_cut((sub.error or sub.note or '').split(chr(10))[0], 120))}"
    ci = "" if sub.ci_low is None or sub.ci_high is None else \
        f" [{sub.ci_low:.2f}, {sub.ci_high:.2f}]"
    gain = "" if sub.improvement is None else f", Δ {sub.improvement:+.2f}"
    noise = {True: " (significant)", False: " (within noise)", None: ""}[sub.significant]
    split = "" if sub.split == "all" else f" on the {sub.split} split"
    return f"{head} [bold]{sub.score:.2f}[/]{ci}{split}{gain}{noise}"


def event_line(ev: AgentEvent) -> str | None:
    """One agent event on one line (token usage is left out)."""
    error = " [red](error)[/]" if ev.is_error else ""
    if ev.kind == "prompt":
        return f"[cyan]prompt[/] {safe(_cut(ev.text or ''))}"
    if ev.kind == "turn":
        return f"[cyan]turn[/]  {ev.turn}" + (f" {safe(_cut(ev.text))}" if ev.text else "")
    if ev.kind == "message":
        return f"[cyan]says[/]  {safe(_cut(ev.text or ''))}"
    if ev.kind == "tool_call":
        what = ev.command or ev.path or ev.text or ""
        return f"[cyan]tool[/]  {safe(ev.name or '?')} {safe(_cut(what))}{error}"
    if ev.kind == "command":
        code = "" if ev.exit_code is None else f" → exit {ev.exit_code}"
        return f"[cyan]$[/]     {safe(_cut(ev.command or ''))}{code}{error}"
    if ev.kind == "file_edit":
        return f"[cyan]edit[/]  {safe(_cut(ev.path or ''))}"
    return None


def program_line(ev: ExecEvent) -> str:
    return f"[blue]exec[/]  {safe(_cut(' '.join(ev.argv) or ev.program))}"


def final_words(record: RunRecord) -> str:
    """The run's result in one line, once its record is closed."""
    from a2rl.cli._show import final_line

    head = f"run {safe(record.run_id)} {safe(record.status)}" + (
        f" ({safe(record.exit_reason)})" if record.exit_reason else "")
    if record.best is not None:
        head += f": best [bold]{record.best.score:.2f}[/] ({safe(record.best.submission_id)})"
        if record.improvement is not None:
            head += f", improvement {record.improvement:+.2f}"
    else:
        head += ": no valid submission"
    head += f"; {len(record.submissions)} submission(s)"
    if record.config.final == "hidden":
        head += f"; final (hidden test): {final_line(record)}"
    if record.error:
        head += f"; error: [red]{safe(_cut(record.error, 300))}[/]"
    return head


def follow(run_dir: Path, console: Console, *, every_s: float = 1.0,
           harness_alive: Callable[[], bool] | None = None) -> int:
    """Print what happens in the run at `run_dir` until its record is closed, then its result.
    Returns 0, or 1 when the harness died without closing the run (`harness_alive` says)."""
    from a2rl.agents import get_agent
    from a2rl.schema import load_run

    record = load_run(run_dir)
    try:
        agent: Agent | None = get_agent(record.config.agent)
    except Exception:  # noqa: BLE001 - an agent this install lacks: its output lines instead
        agent = None
    follower = RunFollower(run_dir, record, agent)
    while True:
        # asked before reading: a harness gone before a read that still finds the record open
        # died without closing it
        gone = harness_alive is not None and not harness_alive()
        for line in follower.poll():
            stamp = "        " if line.at_s is None else f"{clock(line.at_s):>8}"
            console.print(f"[dim]{stamp}[/] {line.text}", highlight=False)
        if follower.closed:
            from a2rl.cli._show import live_record

            console.print(final_words(live_record(follower.record, run_dir)), highlight=False)
            return 0
        if gone:
            console.print(f"[red]the harness of run {safe(follower.record.run_id)} is gone "
                          f"without closing it[/]; close it with `a2rl runs repair "
                          f"{safe(run_dir)}`", highlight=False)
            return 1
        time.sleep(every_s)
