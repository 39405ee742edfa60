"""Score the base model before the agent starts (not charged to its budget), with a cache."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl._paths import cache_dir
from a2rl._util import atomic_write_text, stable_hash, utcnow
from a2rl.grader._artifact import folder_content_key
from a2rl.grader._evaluation import (
    EVALUATOR_VERSION,
    EvalFailed,
    read_item_values,
    run_evaluation,
)
from a2rl.grader._items import ItemValues, unseen_score
from a2rl.grader._secret import public_fingerprint, secret_fields
from a2rl.grader._stats import score_interval
from a2rl.inference import engine_cache_key
from a2rl.models import ResolvedModel
from a2rl.schema import BaselineRecord, EvalJob, FinalMode, Split
from a2rl.tasks import EvalOutcome, Task


def baseline_cache_key(task: Task, model: ResolvedModel, final: FinalMode = "off",
                       test_fraction: float = 0.5) -> str:
    # Everything the evaluator reads from the base model, not only its weights.
    return stable_hash({"task": public_fingerprint(task),
                        "model": folder_content_key(model.path, model.content_hash),
                        "evaluator": EVALUATOR_VERSION, "final": final,
                        **({"engine": engine} if (engine := engine_cache_key()) else {}),
                        "test_fraction": test_fraction if final == "hidden" else None})


def _evaluate(task: Task, model: ResolvedModel, out_dir: Path, split: Split,
              test_fraction: float, timeout_s: float,
              on_progress: Callable[[int, int], None] | None) -> tuple[EvalOutcome,
                                                                        ItemValues | None]:
    job = EvalJob(task=task.spec(), model_dir=str(model.path),
                  chat_template_from=str(model.path), out_dir=str(out_dir), split=split,
                  test_fraction=test_fraction,
                  secret_fields=sorted(secret_fields(task.params)))
    try:
        outcome = run_evaluation(job, timeout_s=timeout_s, on_progress=on_progress)
    except EvalFailed as exc:
        raise A2RLError(f"the base model could not be evaluated: {exc}",
                        f"see {out_dir / 'eval.log'}; check that the model loads with "
                        "transformers and fits in memory (a task that cannot be split needs "
                        "--final off)") from exc
    return outcome, read_item_values(out_dir)


def score_baseline(task: Task, model: ResolvedModel, eval_dir: Path, *, timeout_s: float,
                   use_cache: bool = True,
                   on_progress: Callable[[int, int], None] | None = None,
                   final: FinalMode = "off", test_fraction: float = 0.5) -> BaselineRecord:
    """Score the base model. With final="hidden" it is scored on the dev split (the agent's
    reference) and on the hidden test split (the final's reference), in two evaluations."""
    def cache_file() -> Path:
        return cache_dir("baselines") / \
            f"{baseline_cache_key(task, model, final, test_fraction)}.json"

    path: Path | None = None
    if use_cache:
        path = cache_file()
        if path.exists():
            try:
                cached = BaselineRecord.model_validate_json(path.read_text())
                return cached.model_copy(update={"cached": True})
            except ValueError:
                pass  # an old or damaged cache entry: evaluate again
    with ThreadPoolExecutor(1) as pool:
        # Without a lookup nothing needs the key first: it (the task's held-out items hashed,
        # which may mean generating them, 1.1 s for arith's) is computed while the child runs.
        key = pool.submit(cache_file) if path is None else None
        start = time.monotonic()
        split: Split = "dev" if final == "hidden" else "all"
        outcome, items = _evaluate(task, model, eval_dir, split, test_fraction, timeout_s,
                                   on_progress)
    path = key.result() if key is not None else path
    interval = score_interval(items.values, outcome.score) if items else None
    unseen = unseen_score(items) if items else None
    fields: dict[str, object] = {}
    if final == "hidden":
        test, test_items = _evaluate(task, model, eval_dir.with_name(eval_dir.name + "-test"),
                                     "test", test_fraction, timeout_s, on_progress)
        t_int = score_interval(test_items.values, test.score) if test_items else None
        fields = {"test_score": test.score, "test_n_items": test.n_items,
                  "test_ci_low": t_int.low if t_int else None,
                  "test_ci_high": t_int.high if t_int else None, "test_items": test_items}
    record = BaselineRecord(score=outcome.score, n_items=outcome.n_items, metrics=outcome.metrics,
                            model_hash=model.content_hash, task_fingerprint=public_fingerprint(task),
                            evaluator_version=EVALUATOR_VERSION,
                            eval_seconds=round(time.monotonic() - start, 2),
                            computed_at=utcnow(), split=split,
                            ci_low=interval.low if interval else None,
                            ci_high=interval.high if interval else None,
                            ci_method=interval.method if interval else None, items=items,
                            unseen_score=unseen[0] if unseen else None,
                            n_unseen=unseen[1] if unseen else None,
                            **fields)  # type: ignore[arg-type]
    assert path is not None
    atomic_write_text(path, record.model_dump_json(indent=2))
    return record
