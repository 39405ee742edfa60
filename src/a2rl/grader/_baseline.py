"""Score the base model before the agent starts (not charged to its budget), with a cache."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from a2rl._errors import A2RLError
from a2rl._paths import cache_dir
from a2rl._util import atomic_write_text, stable_hash, utcnow
from a2rl.grader._evaluation import EVALUATOR_VERSION, EvalFailed, EvalJob, run_evaluation
from a2rl.models import ResolvedModel
from a2rl.tasks import Task


class BaselineRecord(BaseModel):
    """`baseline.json` in the run directory, and the cache entry under $A2RL_HOME/baselines/."""

    score: float
    """The base model's score (0–100) on the held-out evaluation."""
    n_items: int
    """Items scored."""
    metrics: dict[str, float]
    """Secondary metrics from the same evaluation."""
    model_hash: str
    """Content hash of the base model's weights."""
    task_fingerprint: str
    """Identity of the evaluation (task, version, options, held-out items)."""
    evaluator_version: str
    """a2rl's evaluator version; a change invalidates the cache."""
    eval_seconds: float
    """Wall time of the evaluation that produced this score."""
    computed_at: dt.datetime
    """When that evaluation ran (UTC)."""
    cached: bool = False
    """True when this run reused a cached baseline instead of evaluating again."""


def baseline_cache_key(task: Task, model: ResolvedModel) -> str:
    return stable_hash({"task": task.fingerprint(), "model": model.content_hash,
                        "evaluator": EVALUATOR_VERSION})


def score_baseline(task: Task, model: ResolvedModel, eval_dir: Path, *, timeout_s: float,
                   use_cache: bool = True,
                   on_progress: Callable[[int, int], None] | None = None) -> BaselineRecord:
    cache_file = cache_dir("baselines") / f"{baseline_cache_key(task, model)}.json"
    if use_cache and cache_file.exists():
        cached = BaselineRecord.model_validate_json(cache_file.read_text())
        return cached.model_copy(update={"cached": True})
    job = EvalJob(task=task.spec(), model_dir=str(model.path),
                  chat_template_from=str(model.path), out_dir=str(eval_dir))
    start = time.monotonic()
    try:
        outcome = run_evaluation(job, timeout_s=timeout_s, on_progress=on_progress)
    except EvalFailed as exc:
        raise A2RLError(f"the base model could not be evaluated: {exc}",
                        f"see {eval_dir / 'eval.log'}; check that the model loads with "
                        "transformers and fits in memory") from exc
    record = BaselineRecord(score=outcome.score, n_items=outcome.n_items, metrics=outcome.metrics,
                            model_hash=model.content_hash, task_fingerprint=task.fingerprint(),
                            evaluator_version=EVALUATOR_VERSION,
                            eval_seconds=round(time.monotonic() - start, 2),
                            computed_at=utcnow())
    atomic_write_text(cache_file, record.model_dump_json(indent=2))
    return record
