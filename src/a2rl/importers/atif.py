"""a2rl's normalised agent events to ATIF and back (`a2rl export atif`, `a2rl import harbor`).

An a2rl run becomes one ATIF trajectory: each `prompt` event a user step; each model turn an
agent step holding the turn's text, its tool calls (a shell command's call carries
`{"command": …}`, a file edit's `{"file_path": …}`), what each call returned as the step's
observation, and the turn's token use and cost as its metrics. What ATIF has no field for
rides in `extra` objects under names starting with `a2rl`: each call's exit code, error flag
and times (`step.extra.a2rl_calls`), the event log's own turn index (`step.extra.a2rl_turn`),
and the run's submissions with their scores, its baseline and best (`extra.a2rl`); the best
score is also `final_metrics.extra.reward`. Reading a trajectory back, those are used where
present and reconstructed from the steps (times, turn order) where not, so a trajectory
written by any ATIF producer yields a2rl events too.
"""

from __future__ import annotations

import datetime as dt
import math
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from a2rl._errors import A2RLError
from a2rl.agents import cap_text, clean_text
from a2rl.importers._atif import (
    SCHEMA_VERSION,
    Agent,
    FinalMetrics,
    Metrics,
    Observation,
    ObservationResult,
    Step,
    ToolCall,
    Trajectory,
    iso,
)
from a2rl.importers._common import interpolate, parse_time
from a2rl.schema import (
    AgentEvent,
    RunRecord,
    SubmissionRecord,
    current_submissions,
    load_run,
    read_jsonl,
)

SHELL_KEYS = ("command", "cmd", "keystrokes")
"""Tool-call arguments that hold a shell command line (Claude Code's Bash, Codex's shell,
Terminus' keystrokes)."""
PATH_KEYS = ("file_path", "path", "filename", "target_file")
"""Tool-call arguments that name the file a call writes or edits."""
CONTENT_KEYS = ("content", "file_text", "contents")
"""Tool-call arguments that hold a whole file's new text (a write, not a patch)."""


def cap(text: str) -> tuple[str, int | None]:
    """`text` as an event holds it: key-shaped tokens redacted (a Harbor trajectory is
    another harness's record), cut to OUTPUT_CAP with its head and tail kept, and its full
    length when it was cut (None otherwise)."""
    return cap_text(clean_text(text))


# --- a2rl events → ATIF -------------------------------------------------------------------


@dataclass
class _Call:
    id: str
    name: str
    t_s: float
    command: str | None = None
    path: str | None = None
    output: str | None = None
    output_chars: int | None = None
    is_error: bool | None = None
    exit_code: int | None = None
    end_s: float | None = None

    def take(self, ev: AgentEvent) -> None:
        """The details of an event about this call (its command or edit, its result)."""
        self.command = ev.command if ev.command is not None else self.command
        self.path = ev.path if ev.path is not None else self.path
        if self.output is None and ev.output is not None:
            self.output, self.output_chars = ev.output, ev.output_chars
        if ev.is_error is not None:
            self.is_error = ev.is_error
        elif ev.extra.get("status") == "error":
            self.is_error = True
        self.exit_code = ev.exit_code if ev.exit_code is not None else self.exit_code
        self.end_s = ev.end_s if ev.end_s is not None else self.end_s


@dataclass
class _Turn:
    turn: int
    t_s: float
    step_id: int
    model: str | None = None
    texts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)
    tokens_in: int | None = None
    tokens_out: int | None = None
    cached: int | None = None
    cost: float | None = None
    last: AgentEvent | None = None

    def add(self, ev: AgentEvent) -> None:
        step_id = self.step_id
        if ev.kind == "turn":
            self.model = ev.extra.get("model") or self.model
        elif ev.kind == "message" and ev.text:
            (self.errors if ev.extra.get("error") == "1" else self.texts).append(ev.text)
        elif ev.kind == "usage":
            self.tokens_in = (self.tokens_in or 0) + (ev.input_tokens or 0)
            self.tokens_out = (self.tokens_out or 0) + (ev.output_tokens or 0)
            read = ev.extra.get("cache_read_input_tokens") or ev.extra.get("cached_tokens")
            if read and read.lstrip("-").isdigit():
                self.cached = (self.cached or 0) + int(read)
            if ev.cost_usd is not None:
                self.cost = (self.cost or 0.0) + ev.cost_usd
        elif ev.kind == "tool_call":
            own = ev.extra.get("tool_use_id")
            if not own or any(c.id == own for c in self.calls):  # ids answer calls: unique
                own = f"call_{step_id}_{len(self.calls) + 1}"
            call = _Call(id=own, name=ev.name or "tool", t_s=ev.t_s)
            call.take(ev)
            self.calls.append(call)
        elif ev.kind in ("command", "file_edit"):
            # The launchers write a call's command or edit right after the call itself.
            if self.last is not None and self.last.kind == "tool_call" and self.calls \
                    and self.calls[-1].command is None and self.calls[-1].path is None:
                self.calls[-1].take(ev)
            else:
                default = "shell" if ev.kind == "command" else "edit"
                call = _Call(id=f"call_{step_id}_{len(self.calls) + 1}", name=ev.name or default,
                             t_s=ev.t_s)
                call.take(ev)
                self.calls.append(call)
        self.last = ev

    def step(self, start: dt.datetime | None) -> Step:
        step_id = self.step_id
        calls = [ToolCall(tool_call_id=c.id, function_name=c.name,
                          arguments={"command": c.command} if c.command is not None
                          else {"file_path": c.path} if c.path is not None else {})
                 for c in self.calls]
        results = [ObservationResult(source_call_id=c.id, content=c.output or "")
                   for c in self.calls if c.output is not None or c.exit_code is not None]
        meta = {c.id: {k: v for k, v in (("t_s", c.t_s), ("end_s", c.end_s),
                                          ("exit_code", c.exit_code), ("is_error", c.is_error),
                                          ("output_chars", c.output_chars)) if v is not None}
                for c in self.calls}
        extra: dict[str, Any] = {"a2rl_turn": self.turn, "a2rl_t_s": self.t_s}
        if meta:
            extra["a2rl_calls"] = meta
        if self.errors:
            extra["a2rl_errors"] = self.errors
        metrics = None
        if self.tokens_in is not None or self.cost is not None:
            metrics = Metrics(prompt_tokens=self.tokens_in, completion_tokens=self.tokens_out,
                              cached_tokens=self.cached, cost_usd=self.cost)
        return Step(step_id=step_id, source="agent", model_name=self.model,
                    timestamp=_stamp(start, self.t_s), message="\n\n".join(self.texts),
                    tool_calls=calls or None, metrics=metrics, extra=extra,
                    observation=Observation(results=results) if results else None)


def _stamp(start: dt.datetime | None, t_s: float) -> str | None:
    return iso(start + dt.timedelta(seconds=t_s)) if start is not None else None


def _finite(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else x


def _submission(s: SubmissionRecord) -> dict[str, Any]:
    return {"id": s.id, "seq": s.seq, "elapsed_s": s.elapsed_s, "model_path": s.model_path,
            "status": s.status, "score": _finite(s.score), "baseline": _finite(s.baseline),
            "improvement": _finite(s.improvement), "ci_low": s.ci_low, "ci_high": s.ci_high,
            "significant": s.significant, "split": s.split, "error": s.error}


def trajectory_of_events(events: Iterable[AgentEvent], *, session_id: str, agent: Agent,
                         start: dt.datetime | None) -> Trajectory:
    """One ATIF trajectory from a run's events, in their order: a step per prompt and per
    model turn (at the turn's first event)."""
    slots: list[AgentEvent | _Turn] = []
    turns: dict[int, _Turn] = {}
    for ev in events:
        if ev.kind == "prompt":
            slots.append(ev)
            continue
        turn = turns.get(ev.turn)
        if turn is None:
            turn = turns[ev.turn] = _Turn(turn=ev.turn, t_s=ev.t_s, step_id=len(slots) + 1)
            slots.append(turn)
        turn.add(ev)
    steps: list[Step] = []
    for i, slot in enumerate(slots, 1):
        if isinstance(slot, _Turn):
            steps.append(slot.step(start))
        else:
            steps.append(Step(step_id=i, source="user", message=slot.text or "",
                              timestamp=_stamp(start, slot.t_s),
                              extra={"a2rl_turn": slot.turn, "a2rl_t_s": slot.t_s}))
    metrics = [s.metrics for s in steps if s.metrics is not None]
    cost = [m.cost_usd for m in metrics if m.cost_usd is not None]
    return Trajectory(
        schema_version=SCHEMA_VERSION, session_id=session_id, agent=agent, steps=steps,
        final_metrics=FinalMetrics(
            total_prompt_tokens=sum(m.prompt_tokens or 0 for m in metrics) if metrics else None,
            total_completion_tokens=sum(m.completion_tokens or 0 for m in metrics)
            if metrics else None,
            total_cached_tokens=sum(m.cached_tokens for m in metrics if m.cached_tokens is not None)
            if any(m.cached_tokens is not None for m in metrics) else None,
            total_cost_usd=round(sum(cost), 6) if cost else None, total_steps=len(steps)))


def trajectory_of_run(run_dir: Path) -> Trajectory:
    """The ATIF trajectory of an a2rl run (its agent/events.jsonl and ledger), with the
    submissions' scores as the trajectory's rewards."""
    record = load_run(run_dir)
    path = run_dir / "agent" / "events.jsonl"
    if not path.is_file():
        raise A2RLError(f"{run_dir} has no agent/events.jsonl: nothing to write as a trajectory",
                        "export a run whose agent wrote events (a CLI agent, or an imported run "
                        "with a readable transcript)")
    events = read_jsonl(path, AgentEvent)
    ledger = run_dir / "ledger.jsonl"
    subs = current_submissions(ledger) if ledger.exists() else list(record.submissions)
    prov = record.provenance
    agent = Agent(name=record.config.agent,
                  version=(prov.agent_cli_version if prov and prov.agent_cli_version
                           else record.versions.get("agent") or "unknown"),
                  model_name=(prov.driver_model if prov and prov.driver_model else None)
                  or record.config.driver)
    start = record.agent_started_at or record.created_at
    traj = trajectory_of_events(events, session_id=record.run_id, agent=agent, start=start)
    traj.notes = ("Written by a2rl from agent/events.jsonl. Submissions and their scores (0-100) "
                  "are in extra.a2rl; each call's exit code, error flag and times in the "
                  "step's extra.a2rl_calls.")
    traj.extra = {"a2rl": _run_extra(record, subs)}
    assert traj.final_metrics is not None
    best = record.best.score if record.best else None
    traj.final_metrics.extra = {"reward": best, "baseline": _baseline(record, subs),
                                "improvement": record.improvement}
    return traj


def _baseline(record: RunRecord, subs: list[SubmissionRecord]) -> float | None:
    if record.baseline is not None:
        return _finite(record.baseline.score)
    return next((b for s in subs if (b := _finite(s.baseline)) is not None), None)


def _run_extra(record: RunRecord, subs: list[SubmissionRecord]) -> dict[str, Any]:
    return {"run_id": record.run_id, "task": record.config.task, "model": record.config.model,
            "mode": record.config.mode, "budget_s": record.config.budget_s,
            "agent_s": record.timings.agent_s, "started_at": iso(record.agent_started_at
                                                                 or record.created_at),
            "baseline": _baseline(record, subs),
            "best": record.best.model_dump(mode="json") if record.best else None,
            "submissions": [_submission(s) for s in subs]}


# --- ATIF → a2rl events -------------------------------------------------------------------


def read_trajectory(text: str | bytes, where: str) -> Trajectory:
    """A trajectory from its JSON text, with an error naming the first problems."""
    try:
        return Trajectory.model_validate_json(text)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(document)'}: {e['msg']}"
            for e in exc.errors(include_url=False)[:5])
        raise A2RLError(f"{where} is not a valid ATIF trajectory ({exc.error_count()} "
                        f"problem(s)): {problems}",
                        "pass the trajectory.json an ATIF producer wrote (Harbor's agents write "
                        "it to <trial>/agent/trajectory.json)") from None


def shell_command(args: dict[str, Any]) -> str | None:
    """The shell command line a call ran, from its arguments (None: not a shell call)."""
    for key in SHELL_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.rstrip("\n")
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return shlex.join(value)
    return None


def edited_path(args: dict[str, Any]) -> str | None:
    """The file a call wrote or edited, as the agent named it (None: no file call)."""
    return next((v for k in PATH_KEYS if isinstance(v := args.get(k), str) and v), None)


def written_text(args: dict[str, Any]) -> str | None:
    """The whole new text of the file a call wrote (None: an edit, or no file call)."""
    return next((v for k in CONTENT_KEYS if isinstance(v := args.get(k), str)), None)


def step_times(traj: Trajectory, start: dt.datetime | None, end_s: float | None) -> list[float]:
    """Seconds after `start` of each step: a2rl's own time where the step carries it, else its
    timestamp, else interpolated between the steps that have one (and the end)."""
    anchors: list[tuple[int, float]] = []
    for i, step in enumerate(traj.steps):
        own = (step.extra or {}).get("a2rl_t_s")
        if isinstance(own, int | float) and not isinstance(own, bool) and math.isfinite(own):
            anchors.append((i, max(0.0, float(own))))
        elif step.timestamp and start is not None:
            anchors.append((i, max(0.0, (parse_time(step.timestamp) - start).total_seconds())))
    if not anchors:
        anchors = [(0, 0.0)]
    if end_s is not None and len(traj.steps) > 1 and anchors[-1][0] < len(traj.steps) - 1:
        anchors.append((len(traj.steps) - 1, end_s))
    return interpolate(len(traj.steps), anchors)


def _meta(step: Step) -> dict[str, dict[str, Any]]:
    calls = (step.extra or {}).get("a2rl_calls")
    if not isinstance(calls, dict):
        return {}
    return {str(k): v for k, v in calls.items() if isinstance(v, dict)}


def number(value: Any) -> float | None:
    """A finite JSON number as a float (None for anything else: text, booleans, NaN)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def events_of_trajectory(traj: Trajectory, *, start: dt.datetime | None,
                         end_s: float | None = None,
                         relative: Callable[[str], str | None] | None = None) -> list[AgentEvent]:
    """a2rl's normalised events of a trajectory. `relative(path) -> str | None` maps a file
    path the agent named to its workspace-relative form (None: kept as named)."""
    times = step_times(traj, start, end_s)
    events: list[AgentEvent] = []
    turn = -1
    for i, step in enumerate(traj.steps):
        t = times[i]
        nxt = times[i + 1] if i + 1 < len(times) else end_s
        own_turn = (step.extra or {}).get("a2rl_turn")
        given = own_turn if isinstance(own_turn, int) and not isinstance(own_turn, bool) \
            and own_turn >= max(turn, 0) else None
        if step.source != "agent":
            text, _ = cap(step.message)
            events.append(AgentEvent(kind="prompt", turn=given if given is not None else max(turn + 1, 0),
                                     t_s=t, text=text, extra={"source": step.source}))
            continue
        turn = given if given is not None else turn + 1
        model = step.model_name or traj.agent.model_name
        events.append(AgentEvent(kind="turn", turn=turn, t_s=t, extra={"model": model} if model else {}))
        if step.metrics is not None:
            m = step.metrics
            extra = {"cached_tokens": str(m.cached_tokens)} if m.cached_tokens is not None else {}
            events.append(AgentEvent(kind="usage", turn=turn, t_s=t, input_tokens=m.prompt_tokens,
                                     output_tokens=m.completion_tokens, cost_usd=m.cost_usd,
                                     extra=extra))
        if step.message.strip():
            events.append(AgentEvent(kind="message", turn=turn, t_s=t, text=cap(step.message)[0]))
        for err in (step.extra or {}).get("a2rl_errors") or []:
            if isinstance(err, str):
                events.append(AgentEvent(kind="message", turn=turn, t_s=t, text=cap(err)[0],
                                         extra={"error": "1"}))
        results = step.observation.results if step.observation else []
        meta = _meta(step)
        for call in step.tool_calls or []:
            events += _call_events(call, [r for r in results if r.source_call_id == call.tool_call_id],
                                   meta.get(call.tool_call_id, {}), turn, t, nxt, relative)
        for r in results:
            if r.source_call_id is None and r.content:
                events.append(AgentEvent(kind="message", turn=turn, t_s=t, text=cap(r.content)[0],
                                         extra={"role": "observation"}))
    return events


def _call_events(call: ToolCall, results: list[ObservationResult], meta: dict[str, Any],
                 turn: int, t: float, nxt: float | None,
                 relative: Callable[[str], str | None] | None) -> list[AgentEvent]:
    contents = [r.content for r in results if r.content is not None]
    full = "\n".join(contents) if contents else None
    output, cut = cap(full) if full is not None else (None, None)
    chars = meta.get("output_chars")
    chars = chars if isinstance(chars, int) and not isinstance(chars, bool) else cut
    is_error = meta.get("is_error") if isinstance(meta.get("is_error"), bool) else None
    code = meta.get("exit_code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    start = number(meta.get("t_s"))
    at = start if start is not None else t
    end = number(meta.get("end_s"))
    command = shell_command(call.arguments)
    path = edited_path(call.arguments) if command is None else None
    # As the launchers write them: the call event holds what the tool returned, the command
    # or edit event after it what ran or changed.
    ev = AgentEvent(kind="tool_call", turn=turn, t_s=at, name=call.function_name, output=output,
                    output_chars=chars, is_error=is_error, extra={"tool_use_id": call.tool_call_id})
    if command is not None:
        done = end if end is not None else (max(nxt, at) if nxt is not None else None)
        return [ev, AgentEvent(kind="command", turn=turn, t_s=at, command=command, end_s=done,
                               exit_code=code, is_error=is_error)]
    if path is None:
        return [ev]
    shown = relative(path) if relative is not None else path
    return [ev, AgentEvent(kind="file_edit", turn=turn, t_s=at, name=call.function_name,
                           path=shown if shown is not None else path)]


def submissions_of(traj: Trajectory) -> list[dict[str, Any]] | None:
    """The submissions an a2rl-written trajectory carries (extra.a2rl.submissions), each a
    dict with at least an id, a sequence number and a status; None when it carries none."""
    a2rl = (traj.extra or {}).get("a2rl")
    subs = a2rl.get("submissions") if isinstance(a2rl, dict) else None
    if not isinstance(subs, list):
        return None
    out = [s for s in subs if isinstance(s, dict) and isinstance(s.get("id"), str)
           and isinstance(s.get("seq"), int) and isinstance(s.get("status"), str)]
    return out or None


__all__ = ["CONTENT_KEYS", "PATH_KEYS", "SHELL_KEYS", "Agent", "Trajectory", "cap", "edited_path",
           "events_of_trajectory", "number", "read_trajectory", "shell_command", "step_times",
           "submissions_of", "trajectory_of_events", "trajectory_of_run", "written_text"]
