"""`a2rl sweep MATRIX`: the driver. Resumable: it reads the cells' state from the sweep
directory, skips finished ones, checks every cell to run as `a2rl run` would (its agent's CLI,
credentials, driver and options: a cell that would be refused is never started; with
`skip_unready` the others start), scores each group's baseline once, then runs the rest on the
backend, retrying harness failures up to `max_attempts` (a configuration error never). Stopped
on purpose (Ctrl-C, SIGTERM, SIGHUP), it stops its cells as `stopped`, which a rerun resumes."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from a2rl._console import safe
from a2rl._errors import A2RLError
from a2rl._util import utcnow
from a2rl.schema import TrackingConfig
from a2rl.sweep._cell import Job, JobResult, run_dir_of, stop_file
from a2rl.sweep._matrix import CellSpec, Matrix, expand
from a2rl.sweep._plan import cell_problems
from a2rl.sweep._state import (
    Attempt,
    CellResult,
    CellState,
    SweepInfo,
    load_cell,
    load_info,
    save_cell,
    save_info,
)
from a2rl.sweep._study import (
    Study,
    create_study,
    find_study,
    read_study,
    study_params,
    write_study,
)
from a2rl.sweep._totals import pool_size

WAIT_S = 5.0
"""Longest wait for the backend between two looks at the queue."""


@dataclass
class SweepSummary:
    """What a sweep invocation did."""

    cells: int = 0
    skipped: int = 0
    finished: int = 0
    failed: int = 0
    retried: int = 0
    baselines: int = 0
    unready: int = 0
    """Cells not started: they would be refused on this machine (`skip_unready`)."""
    states: list[CellState] = field(default_factory=list)


def _check_location(sweep_dir: Path) -> None:
    """The sweep directory holds the study secret: it must not lie in a folder the sandbox
    mounts (the Python environment, system folders) where an agent could read it."""
    from a2rl.sandbox import mounted_roots

    resolved = sweep_dir.resolve()
    for root in mounted_roots([]):
        if resolved == root or root in resolved.parents:
            raise A2RLError(f"the sweep directory {sweep_dir} lies inside {root}, which every "
                            "agent sandbox mounts (its study secret would be readable)",
                            "put it elsewhere, e.g. --dir ./sweeps/NAME or on scratch storage")


class SweepTerminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP reached the driver: it stops like Ctrl-C."""


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """Within: SIGTERM and SIGHUP (`kill`, the driver's own job cancelled, a closed terminal)
    stop the sweep like Ctrl-C, once: the attempts in flight are stopped and closed as
    interrupted, for a rerun to retry. Python's default would end the driver on the spot and
    leave its cells' processes running unsupervised while their state says running. Outside
    the main thread (signals cannot be caught there) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, _frame: Any) -> None:
        if fired:
            return  # already stopping
        fired.append(signum)
        raise SweepTerminated(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def _locked(sweep_dir: Path) -> Iterator[None]:
    """One driver per sweep directory (a second one would run cells twice)."""
    path = sweep_dir / ".lock"
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            raise A2RLError(f"another `a2rl sweep` drives {sweep_dir} ({fh.read().strip()})",
                            "wait for it, or stop it; `a2rl sweep status DIR` shows progress"
                            ) from None
        except OSError:
            pass  # a file system without locks (some NFS): carry on unlocked
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} on {os.uname().nodename}\n")
        fh.flush()
        yield


def _study(matrix: Matrix, sweep_dir: Path, console: Console) -> Study:
    """The sweep's study: its own copy in the sweep directory, else the named one under
    $A2RL_HOME/studies (copied in), else a new one."""
    name = matrix.study or matrix.name or "sweep"
    here = sweep_dir / "study.json"
    if here.exists():
        study = read_study(here)
        if study.name != name:
            raise A2RLError(f"{sweep_dir} belongs to study {study.name!r}, the matrix names "
                            f"{name!r}", "use another --dir, or set study: " + study.name)
    else:
        try:
            study, path = find_study(name)
            console.print(f"study {safe(name)}: joined ({safe(path)})")
        except A2RLError:
            study, path = create_study(name, matrix.study_options)
            console.print(f"study {safe(name)}: created ({safe(path)}; secret: copy it to other "
                          "machines like a key)")
        write_study(here, study)  # the sweep's own copy, as secret as the original
    if matrix.study_options and matrix.study_options != study.task_options:
        raise A2RLError(f"study_options differ from study {study.name}'s fixed options "
                        f"({study.task_options})",
                        "a study's options are fixed when it is created: drop study_options, "
                        "match them, or name a new study")
    return study


def _validate(cells: list[CellSpec], study: Study) -> None:
    """Cheap checks of every cell before anything is submitted (a typo fails here, once)."""
    from a2rl.agents import get_agent
    from a2rl.workspace import check_mode

    seen: set[str] = set()
    for cell in cells:
        for key, check in ((f"agent {cell.agent}", lambda c=cell: get_agent(c.agent)),
                           (f"mode {cell.mode}", lambda c=cell: check_mode(c.mode)),
                           (f"task {cell.task} {cell.task_options}",
                            lambda c=cell: study_params(study, c.task, c.task_options))):
            if key in seen:
                continue
            seen.add(key)
            try:
                check()
            except A2RLError as exc:
                raise A2RLError(f"cell {cell.task}/{cell.agent_label}/{cell.mode}: "
                                f"{exc.message}", exc.fix) from exc


def _run_id(spec: CellSpec, cell: str, attempt: int) -> str:
    label = re.sub(r"[^A-Za-z0-9_-]+", "-", spec.agent_label)[:24].strip("-") or "agent"
    return f"{label}-{cell}-a{attempt}"


class _Work:
    """One cell or one baseline group in the driver's queue."""

    def __init__(self, kind: str, key: str, spec: CellSpec, state: CellState | None,
                 max_attempts: int, log: TrackingConfig | None) -> None:
        self.kind, self.key, self.spec, self.state = kind, key, spec, state
        self.max_attempts, self.log = max_attempts, log
        self.attempts = len(state.attempts) if state else 0
        self.last_reason: str | None = None

    def next_job(self, sweep_dir: Path) -> Job:
        self.attempts += 1
        run_id = _run_id(self.spec, self.key, self.attempts) if self.kind == "cell" \
            else f"baseline-{self.key}-a{self.attempts}"
        return Job(kind=self.kind, sweep_dir=str(sweep_dir), key=self.key,  # type: ignore[arg-type]
                   attempt=self.attempts, run_id=run_id, spec=self.spec, log=self.log)


def _finish_cell(sweep_dir: Path, state: CellState, job: Job) -> None:
    from a2rl.schema import load_run

    path = run_dir_of(job)
    record = load_run(path)
    state.status = "finished"
    state.error = None
    state.result = CellResult(
        run_dir=str(path.relative_to(sweep_dir)), exit_reason=record.exit_reason,
        agent_exit_code=record.agent_exit_code,
        baseline=record.baseline.score if record.baseline else None,
        baseline_cached=record.baseline.cached if record.baseline else None,
        best=record.best.score if record.best else None, improvement=record.improvement,
        submissions=len(record.submissions))


def _drive(backend: Any, queue: list[_Work], sweep_dir: Path, max_parallel: int,
           console: Console, summary: SweepSummary) -> list[_Work]:
    """Run every queued item to an end; return those that failed after their last attempt."""
    in_flight: dict[Any, tuple[_Work, Job]] = {}
    failed: list[_Work] = []
    try:
        while queue or in_flight:
            started = _start_some(backend, queue, in_flight, sweep_dir, max_parallel, console)
            if not in_flight and not started:
                raise A2RLError("no cell can start: they need more GPUs than this machine has",
                                "lower resources.gpus, or use backend ray/slurm")
            for handle in backend.wait(list(in_flight), WAIT_S):
                work, job = in_flight.pop(handle)
                try:
                    result = backend.result(handle)
                except Exception as exc:  # the engine lost it: a dead worker or node
                    result = JobResult(outcome="harness_failed", host="?",
                                       reason=f"the backend lost the job ({type(exc).__name__}"
                                              f": {str(exc)[:300]})")
                if _ended(work, job, result, sweep_dir, console, summary):
                    continue
                if work.attempts < work.max_attempts and result.outcome != "refused":
                    summary.retried += 1
                    queue.append(work)
                else:
                    failed.append(work)
    except BaseException as exc:
        # Stopped on purpose (Ctrl-C, SIGTERM, SIGHUP): each attempt in flight is told so (its
        # stop file) before it is stopped, so its run closes as `stopped`, and a rerun resumes
        # it. Any other end of the driver stops them as a harness failure.
        on_purpose = isinstance(exc, KeyboardInterrupt)
        if in_flight:
            why = f" ({exc})" if on_purpose and str(exc) else ""
            console.print(f"[yellow]{'stopped' if on_purpose else 'failed'}{safe(why)}[/]: "
                          f"stopping {len(in_flight)} attempt(s) in flight; rerun the same "
                          "command to resume them")
        for handle, (work, job) in in_flight.items():
            if on_purpose:
                with contextlib.suppress(OSError):
                    stop_file(job).touch()
            with contextlib.suppress(Exception):
                _cancel(backend, handle)
            if work.state is not None:
                _close_attempt(work.state, job, JobResult(
                    outcome="stopped", host="?", reason="the sweep was stopped") if on_purpose
                    else JobResult(outcome="harness_failed", host="?",
                                   reason=f"the sweep driver failed ({type(exc).__name__})"))
                work.state.status = "pending"
                save_cell(sweep_dir, work.state)
        raise
    return failed


def _cancel(backend: Any, handle: Any) -> None:
    if backend.name == "local":
        backend.cancel(handle)
    elif backend.name == "ray":
        backend.ray.cancel(handle)
    elif backend.name == "slurm":
        handle.cancel(check=False)


def _start_some(backend: Any, queue: list[_Work], in_flight: dict[Any, tuple[_Work, Job]],
                sweep_dir: Path, max_parallel: int, console: Console) -> int:
    started = 0
    while queue and len(in_flight) < max_parallel:
        work = queue[0]
        probe = Job(kind=work.kind, sweep_dir=str(sweep_dir), key=work.key,  # type: ignore[arg-type]
                    attempt=work.attempts + 1, run_id="", spec=work.spec)
        if not backend.can_start(probe):
            break
        queue.pop(0)
        job = work.next_job(sweep_dir)
        handle = backend.submit(job)
        in_flight[handle] = (work, job)
        started += 1
        if work.state is not None:
            work.state.status = "running"
            work.state.attempts.append(Attempt(number=job.attempt, run_id=job.run_id,
                                               started_at=utcnow(),
                                               backend_job=backend.job_id(handle)))
            save_cell(sweep_dir, work.state)
        label = f"{work.spec.task_label}/{work.spec.model}" if work.kind == "baseline" else \
            f"{work.spec.task_label}/{work.spec.agent_label}/{work.spec.driver_label}/" \
            f"{work.spec.mode}/{work.spec.model} #{work.spec.repeat}"
        console.print(f"[cyan]→[/] {work.kind} {safe(work.key)} {safe(label)} "
                      f"(attempt {job.attempt})")
    return started


def _close_attempt(state: CellState, job: Job, result: JobResult) -> None:
    for attempt in state.attempts:
        if attempt.number == job.attempt:
            attempt.ended_at = utcnow()
            attempt.outcome = result.outcome
            attempt.reason = result.reason
            attempt.exit_code = result.exit_code
            attempt.host = result.host


def _ended(work: _Work, job: Job, result: JobResult, sweep_dir: Path, console: Console,
           summary: SweepSummary) -> bool:
    """Record one attempt's end; True when the item is done."""
    work.last_reason = result.reason
    state = work.state
    if state is not None:
        _close_attempt(state, job, result)
    if result.outcome == "finished":
        if state is not None:
            try:
                _finish_cell(sweep_dir, state, job)
            except (A2RLError, OSError, ValueError) as exc:
                result = JobResult(outcome="harness_failed", host=result.host,
                                   reason=f"the finished run's record is unreadable ({exc})")
                _close_attempt(state, job, result)
                work.last_reason = result.reason
            else:
                save_cell(sweep_dir, state)
                summary.finished += 1
                r = state.result
                assert r is not None
                best = "—" if r.best is None else f"{r.best:.2f}"
                console.print(f"[green]✔[/] cell {safe(work.key)} finished: best {best}, "
                              f"{r.submissions} submission(s), agent {safe(r.exit_reason)}")
                return True
        else:
            summary.baselines += 1
            console.print(f"[green]✔[/] baseline {safe(work.key)} scored")
            return True
    refused = result.outcome == "refused"
    last = work.attempts >= work.max_attempts or refused
    console.print(f"[red]✘[/] {work.kind} {safe(work.key)} attempt {job.attempt}: "
                  f"{safe(result.reason)}" + (" — a configuration error, not retried" if refused
                                              else "" if last else " — retrying"))
    if state is not None:
        state.status = "failed" if last else "pending"
        if last:
            state.error = (f"configuration error (not retried): {result.reason}" if refused else
                           f"harness failure after {work.attempts} attempt(s): {result.reason}")
            summary.failed += 1
        save_cell(sweep_dir, state)
    return False


def prepare(matrix: Matrix, sweep_dir: Path, console: Console) -> tuple[Study, list[CellSpec]]:
    _check_location(sweep_dir)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    sweep_dir.chmod(0o700)
    study = _study(matrix, sweep_dir, console)
    info = load_info(sweep_dir)
    if info is not None and info.study_id != study.id:
        raise A2RLError(f"{sweep_dir} was run with another study ({info.study})",
                        "use another --dir")
    cells = expand(matrix, study.name)
    _validate(cells, study)
    save_info(sweep_dir, SweepInfo(name=matrix.name or sweep_dir.name, study=study.name,
                                   study_id=study.id, matrix=matrix, updated_at=utcnow()))
    return study, cells


def _readiness(specs: list[CellSpec], skip_unready: bool) -> dict[str, str]:
    """Cell id → why `a2rl run` would refuse it on this machine, for the cells that would be.
    Without `skip_unready` any such cell refuses the sweep before anything starts."""
    problems = {spec.id: cell_problems(spec) for spec in specs}
    unready = {cell: found for cell, found in problems.items() if found}
    if unready and not skip_unready:
        counts: dict[str, int] = {}
        for found in unready.values():
            for p in found:
                counts[p.message] = counts.get(p.message, 0) + 1
        fixes = dict.fromkeys(p.fix for found in unready.values() for p in found if p.fix)
        raise A2RLError(f"{len(unready)} of {len(specs)} cell(s) to run would be refused on "
                        "this machine, so none was started: " + "; ".join(
                            f"{msg} ({n} cell(s))" for msg, n in counts.items()),
                        "; ".join(fixes) + "; or pass --skip-unready to start the other cells")
    return {cell: "; ".join(p.message for p in found) for cell, found in unready.items()}


def check_cells_ready(matrix: Matrix, sweep_dir: Path, *, retry_failed: bool = False,
                      skip_unready: bool = False) -> dict[str, str]:
    """`_readiness` of the cells a run of the sweep in `sweep_dir` would start (nothing is
    written): before a driver is submitted as a job."""
    cells = expand(matrix, matrix.study or matrix.name or "sweep")
    states = {c.id: load_cell(sweep_dir, c.id) for c in cells} if sweep_dir.is_dir() else {}
    return _readiness([c for c in cells if (s := states.get(c.id)) is None
                       or not _done(s, retry_failed)], skip_unready)


def run_sweep(matrix: Matrix, sweep_dir: Path, *, console: Console | None = None,
              max_parallel: int | None = None, retry_failed: bool = False,
              skip_unready: bool = False) -> SweepSummary:
    """Run (or resume) a sweep to its end."""
    from a2rl.sweep._backends import make_backend

    console = console or Console()
    sweep_dir = sweep_dir.absolute()
    summary = SweepSummary()
    with _stop_on_signals(), _locked(_mkdir(sweep_dir)):
        study, cells = prepare(matrix, sweep_dir, console)
        summary.cells = len(cells)
        todo: list[_Work] = []
        states: dict[str, CellState] = {}
        for spec in cells:
            state = load_cell(sweep_dir, spec.id) or CellState(id=spec.id, spec=spec)
            state.spec = spec  # resources may have changed (not part of the id)
            states[spec.id] = state
        to_check = [spec for spec in cells if not _done(states[spec.id], retry_failed)]
        unready = _readiness(to_check, skip_unready)
        for spec in cells:
            state = states[spec.id]
            if _done(state, retry_failed):
                summary.skipped += 1
                continue
            if spec.id in unready:
                state.status, state.error = "pending", f"not started here: {unready[spec.id]}"
                save_cell(sweep_dir, state)
                summary.unready += 1
                continue
            if state.status == "running":  # a driver that stopped without closing it
                for attempt in state.attempts:
                    if attempt.outcome is None:
                        attempt.outcome, attempt.ended_at = "harness_failed", utcnow()
                        attempt.reason = "the sweep stopped while it ran"
                _close_stale(sweep_dir, state, matrix)
            # attempts stopped on purpose do not count; failed cells get a fresh budget
            stopped = sum(a.outcome == "stopped" for a in state.attempts)
            budget = matrix.max_attempts + (len(state.attempts) if state.status == "failed"
                                            else stopped)
            state.status, state.error = "pending", None
            save_cell(sweep_dir, state)
            todo.append(_Work("cell", spec.id, spec, state, budget, matrix.log))
        summary.states = [states[c.id] for c in cells]
        console.print(f"sweep {safe(matrix.name)}: {len(cells)} cell(s), {summary.skipped} "
                      f"already done, {len(todo)} to run on backend {matrix.backend}; "
                      f"study {safe(study.name)} ({study.id})")
        if unready:
            console.print(f"[yellow]{len(unready)} cell(s) not started (--skip-unready)[/]: "
                          + safe("; ".join(sorted(set(unready.values())))), highlight=False)
        if not todo:
            return summary
        parallel = pool_size(matrix, len(todo), max_parallel)
        backend = make_backend(matrix, sweep_dir, parallel)
        try:
            groups: dict[str, CellSpec] = {}
            for work in todo:
                groups.setdefault(work.spec.baseline_group(), work.spec)
            baselines = [_Work("baseline", g, spec, None, matrix.max_attempts, None)
                         for g, spec in groups.items()
                         if not (sweep_dir / "baselines" / f"{g}.json").exists()]
            lost = {w.key: w.last_reason for w in
                    _drive(backend, baselines, sweep_dir, parallel, console, summary)}
            runnable = []
            for work in todo:
                reason = lost.get(work.spec.baseline_group())
                if reason is None:
                    runnable.append(work)
                    continue
                assert work.state is not None
                work.state.status = "failed"
                work.state.error = f"its baseline could not be scored: {reason}"
                save_cell(sweep_dir, work.state)
                summary.failed += 1
            _drive(backend, runnable, sweep_dir, parallel, console, summary)
        finally:
            backend.close()
    console.print(f"sweep {safe(matrix.name)}: {summary.finished} finished, {summary.failed} "
                  f"failed, {summary.skipped} skipped, {summary.retried} retried"
                  + (f", {summary.unready} not started (unready here)" if summary.unready else "")
                  + f"; `a2rl sweep status {safe(sweep_dir)}`")
    return summary


def _done(state: CellState, retry_failed: bool) -> bool:
    """Whether a rerun leaves the cell alone: finished, or failed without --retry-failed."""
    return state.status == "finished" or (state.status == "failed" and not retry_failed)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _close_stale(sweep_dir: Path, state: CellState, matrix: Matrix) -> None:
    """An attempt whose driver died before it ended. Local: close its open record (repair
    kills the run's leftover processes, which only makes sense on the machine that ran it).
    Slurm: cancel its job (still queued or running, it would duplicate the retry; SIGTERM
    closes its record). Ray: the old driver's tasks ended with it."""
    for attempt in state.attempts:
        if attempt.ended_at is None or attempt.reason != "the sweep stopped while it ran":
            continue
        path = sweep_dir / "runs" / state.spec.task / attempt.run_id
        if matrix.backend == "local" and (path / "run.json").exists():
            from a2rl.runner import repair_run

            with contextlib.suppress(Exception):
                repair_run(path)
        elif matrix.backend == "slurm" and attempt.backend_job and matrix.slurm.cluster == \
                "slurm" and (scancel := shutil.which("scancel")):
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run([scancel, attempt.backend_job], capture_output=True, timeout=60)
