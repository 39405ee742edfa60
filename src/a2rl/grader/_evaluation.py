"""Run a task's evaluation in a child process, so a crash or OOM never takes the grader down."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from a2rl.tasks import EvalOutcome, TaskSpec

EVALUATOR_VERSION = "1"
"""Bump when the evaluation harness (not a task) changes in a way that can move scores."""


class EvalJob(BaseModel):
    task: TaskSpec
    model_dir: str
    chat_template_from: str | None
    out_dir: str


class EvalFailed(Exception):
    """The evaluation child failed; the message is safe to show the agent (no held-out data)."""


def run_evaluation(job: EvalJob, *, timeout_s: float,
                   on_progress: Callable[[int, int], None] | None = None) -> EvalOutcome:
    """Evaluate in a child process. Per-item details go to out_dir/details.jsonl."""
    out = Path(job.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "job.json").write_text(job.model_dump_json(indent=2))
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
    with open(out / "eval.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "a2rl.grader._eval_child", str(out / "job.json")],
            stdout=subprocess.PIPE, stderr=log, env=env, start_new_session=True,
        )
        timer = threading.Timer(timeout_s, lambda: _kill_group(proc))
        timer.start()
        started = time.monotonic()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                try:
                    msg = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if on_progress and "done" in msg:
                    on_progress(int(msg["done"]), int(msg["total"]))
            rc = proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                _kill_group(proc)
                proc.wait()
    if time.monotonic() - started >= timeout_s and rc != 0:
        raise EvalFailed(f"evaluation timed out after {timeout_s:.0f} s")
    result = out / "outcome.json"
    if rc != 0 or not result.exists():
        reason = _last_error(out / "eval.log")
        if rc < 0 and -rc == signal.SIGKILL:
            reason = "killed (out of memory?)"
        raise EvalFailed(f"evaluation failed (exit code {rc}): {reason}")
    return EvalOutcome.model_validate_json(result.read_text())


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _last_error(log: Path) -> str:
    """The exception line of a traceback (no prompts or answers are ever printed to this log)."""
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    for ln in reversed(lines):
        if "Error" in ln or "Exception" in ln:
            return ln[:500]
    return lines[-1][:500] if lines else "no output"
