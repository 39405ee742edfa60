"""Log a finished run to Weights & Biases or MLflow (when installed and asked for).

What is logged comes from the run's record only (run.json: the grader's scores), never from the
workspace: the configuration (secret task options stay redacted), one step per scored
submission (score, improvement, elapsed hours), and the summary (baseline, best, improvement,
the hidden final score). run.json and summary.md go along as artifacts.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from a2rl._errors import A2RLError
from a2rl.sweep._matrix import LogOptions


def _flat(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list):
        out[prefix] = ",".join(str(v) for v in value)
    else:
        out[prefix] = value


def run_payload(run_dir: Path) -> tuple[str, dict[str, Any], list[dict[str, float]],
                                        dict[str, float]]:
    """(name, params, per-submission steps, summary metrics) of one run."""
    from a2rl.runner import load_run

    record = load_run(run_dir)
    config = record.config.model_dump(mode="json", exclude={"runs_dir"})
    params: dict[str, Any] = {}
    _flat("", {**config, "model_hash": record.model.content_hash if record.model else None,
               "task_version": record.task.version if record.task else None,
               "sandboxed": record.sandboxed, "flags": record.flags}, params)
    steps = []
    for sub in record.submissions:
        if sub.score is None:
            continue
        step = {"score": sub.score, "seq": float(sub.seq)}
        if sub.improvement is not None:
            step["improvement"] = sub.improvement
        if sub.elapsed_s is not None:
            step["elapsed_h"] = sub.elapsed_s / 3600
        steps.append(step)
    summary: dict[str, float] = {"submissions": float(len(record.submissions))}
    if record.baseline:
        summary["baseline"] = record.baseline.score
    if record.best:
        summary["best"] = record.best.score
    if record.improvement is not None:
        summary["improvement"] = record.improvement
    final = getattr(record, "final", None)
    if final is not None and getattr(final, "score", None) is not None:
        summary["final_test_score"] = float(final.score)
    return record.run_id, params, steps, summary


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise A2RLError(f"--log-to {name}: {name} is not installed", f"pip install {name}"
                        ) from exc


def log_run(run_dir: Path, options: LogOptions) -> str:
    """Log one run; returns the tracker's id for it."""
    name, params, steps, summary = run_payload(run_dir)
    artifacts = [p for p in (run_dir / "run.json", run_dir / "summary.md") if p.exists()]
    if options.to == "wandb":
        wandb = _module("wandb")
        kwargs: dict[str, Any] = {"project": options.project, "name": name, "config": params,
                                  "reinit": True, "dir": str(run_dir)}
        if options.mode:
            kwargs["mode"] = options.mode
        run = wandb.init(**kwargs)
        for i, step in enumerate(steps):
            run.log(step, step=i)
        for key, value in summary.items():
            run.summary[key] = value
        for path in artifacts:
            run.save(str(path), base_path=str(run_dir), policy="now")
        run.finish()
        return str(run.id)
    mlflow = _module("mlflow")
    if options.tracking_uri:
        mlflow.set_tracking_uri(options.tracking_uri)
    mlflow.set_experiment(options.project)
    with mlflow.start_run(run_name=name) as active:
        # MLflow params are strings of at most 6000 characters
        mlflow.log_params({k: str(v)[:6000] for k, v in params.items()})
        for i, step in enumerate(steps):
            mlflow.log_metrics(step, step=i)
        mlflow.log_metrics(summary)
        for path in artifacts:
            mlflow.log_artifact(str(path))
        return str(active.info.run_id)
