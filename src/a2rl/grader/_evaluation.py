"""Run a task's evaluation in a child process, so a crash or OOM never takes the grader down.

The job (task options, held-out seed included) reaches the child on its stdin and is never
written to disk: `job.json` in the evaluation folder is a redacted copy for the audit trail, with
every secret option replaced by a keyed fingerprint.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from a2rl.grader._items import ItemValues
from a2rl.grader._secret import redacted_spec
from a2rl.inference import child_env, child_python
from a2rl.inference import selected as selected_engine
from a2rl.schema import EvalJob
from a2rl.tasks import EvalOutcome

EVALUATOR_VERSION = "2"
"""Bump when the evaluation harness (not a task) changes in a way that can move scores."""

_MAX_ITEMS_FILE = 64 << 20


class EvalFailed(Exception):
    """The evaluation child failed; the message is safe to show the agent (no held-out data)."""


def redacted_job(job: EvalJob) -> dict[str, object]:
    """The job as written to `job.json`: secrets replaced by keyed fingerprints."""
    data = job.model_dump(mode="json")
    data["task"] = redacted_spec(data["task"], frozenset(job.secret_fields), job.task.name)
    return data


def run_evaluation(job: EvalJob, *, timeout_s: float,
                   on_progress: Callable[[int, int], None] | None = None) -> EvalOutcome:
    """Evaluate in a child process. Per-item details go to out_dir/details.jsonl."""
    out = Path(job.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if job.engine is None:
        job = job.model_copy(update={"engine": selected_engine()})
    (out / "job.json").write_text(json.dumps(redacted_job(job), indent=2))
    env = child_env(job.engine, dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                                     TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1"))
    with open(out / "eval.log", "wb") as log:
        proc = subprocess.Popen(
            [child_python(job.engine), "-m", "a2rl.grader._eval_child", "-"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
            start_new_session=True,
        )
        timer = threading.Timer(timeout_s, lambda: _kill_group(proc))
        timer.start()
        started = time.monotonic()
        try:
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(job.model_dump_json().encode())
                proc.stdin.close()
            except BrokenPipeError:
                pass  # the child died at start; its exit code and log say why
            for line in proc.stdout:
                try:
                    msg = json.loads(line)
                    done, total = int(msg["done"]), int(msg["total"])
                except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                    continue
                if on_progress:
                    on_progress(done, total)
            rc = proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                _kill_group(proc)
                proc.wait()
            else:  # anything the child left behind (an engine's worker process) goes too
                _kill_group(proc)
    if time.monotonic() - started >= timeout_s and rc != 0:
        raise EvalFailed(f"evaluation timed out after {timeout_s:.0f} s")
    result = out / "outcome.json"
    if rc != 0 or not result.exists():
        reason = _last_error(out / "eval.log")
        if rc < 0 and -rc == signal.SIGKILL:
            reason = "killed (out of memory?)"
        raise EvalFailed(f"evaluation failed (exit code {rc}): {reason}")
    try:
        return EvalOutcome.model_validate_json(result.read_text())
    except (OSError, ValidationError) as exc:
        raise EvalFailed(f"the evaluation wrote an unreadable outcome ({type(exc).__name__})") \
            from exc


def read_item_values(out_dir: Path) -> ItemValues | None:
    """`items.json` of a finished evaluation (None when absent or unreadable)."""
    path = out_dir / "items.json"
    try:
        if path.stat().st_size > _MAX_ITEMS_FILE:
            return None
        return ItemValues.model_validate_json(path.read_text())
    except (OSError, ValidationError):
        return None


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
