"""What a backend runs for one cell (or one shared baseline): `a2rl run` in a child process.

`execute_job` is the function handed to the backend (a thread of the local pool, a Ray task, a
Slurm job through submitit). It starts `python -m a2rl.sweep._child JOB.json` on the machine it
runs on, waits, and classifies the end from the run's own record: a run that closed normally is
finished whatever the agent did (its crash or silence is a result); a configuration error (the
run refused with exit code 2, before its run folder) is `refused`, never retried; a run the
sweep stopped on purpose (its stop file written before the signal) is `stopped`, resumed later;
a child killed by a signal, a record left open, or a failed harness is a harness failure the
driver retries. A child process keeps the worker alive when the harness is killed (that is what
a dead machine looks like to the cell), and gives each cell a fresh interpreter (its own grader
key, signal handlers and CUDA state); it runs in a session of its own, so Ctrl-C in the
driver's terminal reaches the driver, which stops the cells itself (on purpose).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from a2rl._errors import A2RLError
from a2rl._util import atomic_write_text
from a2rl.schema import TrackingConfig
from a2rl.sweep._matrix import CellSpec

if TYPE_CHECKING:
    from a2rl.schema import RunConfig

JobKind = Literal["cell", "baseline"]
Outcome = Literal["finished", "harness_failed", "refused", "stopped"]
"""How an attempt ended: the run closed normally (whatever the agent did); the harness failed
(retried); the run refused its configuration (exit code 2: never retried); the sweep stopped
it on purpose (resumed, not counted as an attempt)."""
CONFIG_ERROR_EXIT = 2
"""The cell's exit code for an A2RLError (a configuration a retry cannot fix)."""


class Job(BaseModel):
    """One unit of work for a backend."""

    kind: JobKind
    """cell: a run; baseline: score the base model once for a group of cells."""
    sweep_dir: str
    """The sweep directory (the same path on every machine: a shared file system)."""
    key: str
    """Cell id, or baseline group id."""
    attempt: int
    """1-based attempt number."""
    run_id: str
    """Run id (cells) or the attempt's label (baselines)."""
    spec: CellSpec
    """The cell (a baseline job: any cell of its group)."""
    log: TrackingConfig | None = None
    """The tracker the run logs to while it goes (the matrix's `log:`)."""
    cuda_visible_devices: str | None = None
    """Local backend: the GPUs handed to this cell."""


class JobResult(BaseModel):
    """What the worker reports back."""

    outcome: Outcome
    """See `Outcome`."""
    reason: str | None = None
    """Why the harness failed."""
    exit_code: int | None = None
    """The child's exit code (negative: the signal that killed it)."""
    host: str
    """Where it ran."""


def _log_path(job: Job) -> Path:
    sub = "cells" if job.kind == "cell" else "baselines"
    return Path(job.sweep_dir) / sub / job.key / f"attempt-{job.attempt}.log"


def stop_file(job: Job) -> Path:
    """Written by the driver before it stops the job: the stop is on purpose (the run records
    `stopped`, not a failure)."""
    return _log_path(job).with_suffix(".stop")


def run_dir_of(job: Job) -> Path:
    return Path(job.sweep_dir) / "runs" / job.spec.task / job.run_id


def _tail(path: Path, n: int = 6) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in lines[-n:])[-600:]


# The cell processes this process started and that still run (the local backend's pool
# threads): `stop_job` reaches them from the driver's thread, which cannot interrupt a thread
# blocked in wait().
_running: dict[tuple[str, str, int], subprocess.Popen[bytes]] = {}
_running_lock = threading.Lock()


def _job_key(job: Job) -> tuple[str, str, int]:
    return (job.kind, job.key, job.attempt)


def stop_job(job: Job) -> bool:
    """Stop the job's cell process if this process started it and it still runs: SIGTERM,
    which closes an `a2rl run` like Ctrl-C (its record says `terminated`). True when one was
    signalled."""
    with _running_lock:
        proc = _running.get(_job_key(job))
    if proc is None or proc.poll() is not None:
        return False
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    return True


def child_command(job_file: Path) -> list[str]:
    """The cell's process: a fresh interpreter running the job file."""
    return [sys.executable, "-m", "a2rl.sweep._child", str(job_file)]


def split_devices(job: Job) -> tuple[str | None, Job]:
    """(CUDA_VISIBLE_DEVICES of the cell's process, the job to run). With
    `resources.eval_gpus` the cell's devices (the local backend's hand-out, else what the
    scheduler made visible here) are split: the first `gpus` for the agent, the next
    `eval_gpus` become the run's `eval_gpus`, so the grader's evaluations never share the
    agent's GPUs."""
    r = job.spec.resources
    if not r.eval_gpus:
        return job.cuda_visible_devices, job
    ids = ([d for d in job.cuda_visible_devices.split(",") if d.strip()]
           if job.cuda_visible_devices is not None else local_gpus())
    n_agent, n_eval = math.ceil(r.gpus), math.ceil(r.eval_gpus)
    if len(ids) < n_agent + n_eval:
        raise A2RLError(f"the cell asks for {n_agent} agent GPU(s) and {n_eval} evaluation "
                        f"GPU(s), but {len(ids)} are visible here ({','.join(ids) or 'none'})",
                        "give the backend the GPUs (Slurm --gpus-per-node, Ray num_gpus), or "
                        "lower resources.gpus / resources.eval_gpus")
    run = job.spec.run.model_copy(update={"eval_gpus": ",".join(ids[n_agent:n_agent + n_eval])})
    job = job.model_copy(update={"spec": job.spec.model_copy(update={"run": run})})
    return ",".join(ids[:n_agent]), job


def execute_job(job: Job) -> JobResult:
    """Run the job's child process here and classify its end (never raises for a failed run)."""
    log = _log_path(job)
    log.parent.mkdir(parents=True, exist_ok=True)
    host = socket.gethostname()
    try:
        agent_devices, job = split_devices(job)
    except A2RLError as exc:
        return JobResult(outcome="harness_failed", host=host, reason=f"{exc.message} ({exc.fix})")
    job_file = log.with_suffix(".job.json")
    atomic_write_text(job_file, job.model_dump_json())
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="120")
    if agent_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = agent_devices
    with open(log, "ab") as out:
        proc = subprocess.Popen(child_command(job_file), stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
        with _running_lock:
            _running[_job_key(job)] = proc
        try:
            code = proc.wait()
        except BaseException:  # the worker itself is stopped: stop the run the same way
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=60)
            raise
        finally:
            with _running_lock:
                _running.pop(_job_key(job), None)
    if job.kind == "baseline":
        done = (Path(job.sweep_dir) / "baselines" / f"{job.key}.json").exists()
        if code == 0 and done:
            return JobResult(outcome="finished", exit_code=code, host=host)
        return JobResult(outcome="refused" if code == CONFIG_ERROR_EXIT else "harness_failed",
                         exit_code=code, host=host, reason=_reason(code, None, log))
    run_dir = run_dir_of(job)
    status, error = _record_status(run_dir)
    if code == 0 and status == "finished":
        return JobResult(outcome="finished", exit_code=code, host=host)
    if status == "stopped":
        return JobResult(outcome="stopped", exit_code=code, host=host,
                         reason="the sweep stopped it")
    if code == CONFIG_ERROR_EXIT:
        return JobResult(outcome="refused", exit_code=code, host=host,
                         reason=_reason(code, error, log))
    if status not in ("finished", "failed"):
        # The harness died without closing its record (SIGKILL, out of memory): close it
        # from the ledger here, on the machine that ran it, so it reads as harness_died.
        with contextlib.suppress(Exception):
            from a2rl.runner import repair_run

            repair_run(run_dir)
    return JobResult(outcome="harness_failed", exit_code=code, host=host,
                     reason=_reason(code, error, log))


def _record_status(run_dir: Path) -> tuple[str | None, str | None]:
    try:
        data = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return None, None
    return data.get("status"), data.get("error")


def _reason(code: int, error: str | None, log: Path) -> str:
    if code < 0:
        import signal

        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the cell's process was killed ({name})"
    if error:
        return error
    tail = _tail(log)
    return f"the cell's process exited with code {code}" + (f": {tail}" if tail else "")


# --- the child process ---------------------------------------------------------------------

def _config(spec: CellSpec, sweep_dir: Path) -> RunConfig:
    from a2rl.schema import RunConfig
    from a2rl.sweep._matrix import run_config_fields

    extra: dict[str, Any] = run_config_fields(spec.run)
    if spec.scaffold is not None:
        from a2rl.schema import scaffold_config

        extra["scaffold"] = scaffold_config(spec.scaffold, dict(spec.scaffold_options))
    return RunConfig(task=spec.task, task_params=dict(spec.task_options), agent=spec.agent,
                     agent_options=dict(spec.agent_options), model=spec.model, mode=spec.mode,
                     budget_s=spec.budget_s, port=0, runs_dir=str(sweep_dir / "runs"),
                     driver=spec.driver, driver_base_url=spec.driver_base_url, **extra)


def _joined(job: Job) -> RunConfig:
    from a2rl.sweep._study import join_study, read_study

    sweep_dir = Path(job.sweep_dir)
    config = _config(job.spec, sweep_dir)
    if job.log is not None and config.tracking is None:
        config = config.model_copy(update={"tracking": job.log})
    return join_study(config, read_study(sweep_dir / "study.json"))


def _baseline_file(config: RunConfig) -> tuple[Path, str]:
    """This machine's baseline cache file for the run, and its key."""
    from a2rl._paths import cache_dir
    from a2rl.grader import baseline_cache_key
    from a2rl.models import resolve_model
    from a2rl.tasks import get_task

    task = get_task(config.task, config.task_params)
    key = baseline_cache_key(task, resolve_model(config.model), config.final,
                             config.test_fraction)
    return cache_dir("baselines") / f"{key}.json", key


def _score_baseline(job: Job) -> None:
    from rich.console import Console

    from a2rl.grader import score_baseline
    from a2rl.models import resolve_model
    from a2rl.tasks import get_task

    config = _joined(job)
    shared = Path(job.sweep_dir) / "baselines"
    task = get_task(config.task, config.task_params)
    base = resolve_model(config.model)
    record = score_baseline(task, base, shared / job.key / f"eval-{job.attempt}",
                            timeout_s=config.eval_timeout_s, final=config.final,
                            test_fraction=config.test_fraction)
    local, key = _baseline_file(config)
    shutil.copyfile(local, shared / f"{key}.json")
    # The group's marker last: its presence means the shared cache entry is complete.
    atomic_write_text(shared / f"{job.key}.json", json.dumps(
        {"key": key, "task": config.task, "model": config.model, "score": record.score,
         "n_items": record.n_items, "cached": record.cached}, indent=1))
    Console().print(f"baseline {config.task} / {config.model}: {record.score:.2f} on "
                    f"{record.n_items} items" + (" (cached)" if record.cached else ""))


def _run_cell(job: Job) -> int:
    from rich.console import Console

    from a2rl._paths import cache_dir
    from a2rl.runner import run

    config = _joined(job)
    # The group's baseline, scored once: put it into this machine's cache under the key the
    # baseline job computed (the same here: the study's key, the model's content).
    shared = Path(job.sweep_dir) / "baselines"
    marker = shared / f"{job.spec.baseline_group()}.json"
    if marker.exists():
        key = json.loads(marker.read_text())["key"]
        local = cache_dir("baselines") / f"{key}.json"
        if not local.exists():
            shutil.copyfile(shared / f"{key}.json", local)
    record = run(config, console=Console(), run_id=job.run_id, stop_file=stop_file(job))
    return 0 if record.status == "finished" else 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    job = Job.model_validate_json(Path(args[0]).read_text())
    try:
        if job.kind == "baseline":
            _score_baseline(job)
            return 0
        return _run_cell(job)
    except A2RLError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return CONFIG_ERROR_EXIT


def local_gpus() -> list[str]:
    """This machine's GPU ids: $CUDA_VISIBLE_DEVICES, else what nvidia-smi lists."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [g for g in visible.split(",") if g.strip() and g.strip() != "-1"]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [str(i) for i, line in enumerate(out.splitlines()) if line.startswith("GPU ")]
