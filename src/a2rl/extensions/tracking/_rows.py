"""What a tracker receives, as flat key → value rows: the run's parameters, one row per
submission (on the submission sequence axis `seq`), one per change of the agent's phase (on
the agent's hours `elapsed_h`) and the summary at the close.

Keys hold no `/` (MLflow's file store would make folders of them): a phase label such as
`checkpoint/waiting` becomes `checkpoint_waiting` inside a key; the label itself is kept as a
value (the row's `phase`, the phase mapping)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from a2rl.schema import RunRecord, SubmissionRecord

SEQ_KEYS = ("score", "improvement", "ci_low", "ci_high", "significant", "valid", "submitted_h",
            "baseline", "baseline_items")
"""Series charted against the submission sequence number `seq`."""
PHASE_KEYS = ("phase_index", "phase_s.*")
"""Series charted against the agent's hours `elapsed_h`."""


def flat_key(key: str) -> str:
    return key.replace("/", "_")


def _flat(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list):
        out[flat_key(prefix)] = ",".join(str(v) for v in value)
    else:
        out[flat_key(prefix)] = value


def phase_mapping() -> dict[str, str]:
    """Phase index → label, as `phase_index` counts them."""
    from a2rl.analysis import PHASES

    return {str(i): p for i, p in enumerate(PHASES)}


def params(record: RunRecord) -> dict[str, Any]:
    """The run's configuration and identity, flat, with the phase mapping (`phase.<index>`)."""
    config = record.config.model_dump(mode="json", exclude={"runs_dir", "tracking"})
    out: dict[str, Any] = {}
    _flat("", {**config, "run_id": record.run_id,
               "model_hash": record.model.content_hash if record.model else None,
               "task_version": record.task.version if record.task else None,
               "sandboxed": record.sandboxed, "flags": record.flags,
               "phase": phase_mapping()}, out)
    return out


def submission_row(sub: SubmissionRecord) -> tuple[dict[str, float], str] | None:
    """A finished submission's numbers on the `seq` axis (score, interval, gain, whether the
    gain is beyond noise, valid, when it was submitted) and its status; None for a hidden
    final's test record (the headline, logged with the summary) and unfinished states."""
    if sub.split == "test" or sub.status == "pending":
        return None
    row: dict[str, float] = {"seq": float(sub.seq), "valid": float(sub.valid)}
    for key in ("score", "improvement", "ci_low", "ci_high"):
        if (value := getattr(sub, key)) is not None:
            row[key] = float(value)
    if sub.significant is not None:
        row["significant"] = float(sub.significant)
    if sub.elapsed_s is not None:
        row["submitted_h"] = sub.elapsed_s / 3600
    return row, sub.status


def phase_row(index: int, at_s: float, seconds: dict[str, float]) -> dict[str, float]:
    return {"phase_index": float(index), "elapsed_h": at_s / 3600,
            **{flat_key(f"phase_s.{p}"): float(s) for p, s in seconds.items()}}


def summary(record: RunRecord, run_dir: Path) -> dict[str, float]:
    """The run's result, each key logged once: best and its gain, submissions, the hidden
    final, time per phase from the analysis (`time_s.*`) and what the run cost."""
    out: dict[str, float] = {"submissions": float(len(record.submissions))}
    if record.best and record.best.score is not None:
        out["best"] = float(record.best.score)
    if record.improvement is not None:
        out["best_improvement"] = float(record.improvement)
    final = record.final
    if final is not None and final.score is not None:
        out["final_test_score"] = float(final.score)
        if final.improvement is not None:
            out["final_test_improvement"] = float(final.improvement)
    if (cost := record.cost) is not None:
        for key, value in (("cost.usd", cost.usd), ("cost.gpu_hours", cost.gpu_hours),
                           ("cost.input_tokens", cost.input_tokens),
                           ("cost.output_tokens", cost.output_tokens)):
            if value is not None:
                out[key] = float(value)
    analysis = run_dir / "analysis.json"
    if analysis.exists():
        from a2rl.schema import RunAnalysis

        try:
            a = RunAnalysis.model_validate_json(analysis.read_bytes())
        except ValueError:
            a = None
        if a is not None:
            for phase, seconds in a.phase_seconds.items():
                out[flat_key(f"time_s.{phase}")] = float(seconds)
    return out
