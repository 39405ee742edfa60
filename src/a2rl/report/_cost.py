"""What runs cost and what their gain cost, for the leaderboard's cost columns: each run's
recorded spend as row columns, and per group of runs the dollars and GPU-hours per run and the
summed gain per summed dollar and GPU-hour."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from a2rl.results import summarize


def with_cost(row: dict[str, Any], record: Any) -> dict[str, Any]:
    """The run's recorded spend (`RunRecord.cost`) as row columns: `usd` (the agent's LLM
    dollars) and `gpu_hours` (agent and evaluation GPU time); None where not recorded."""
    cost = getattr(record, "cost", None)
    usd = getattr(cost, "usd", None)
    return {**row, "usd": None if usd is None else float(usd),
            "gpu_hours": None if cost is None else float(cost.gpu_hours)}


def _per(gain: Sequence[float | None], spend: Sequence[float | None]) -> tuple[float | None, int]:
    """Summed gain over summed spend across the runs that have both (and the number of them);
    None when they spent nothing or none has both."""
    pairs = [(g, c) for g, c in zip(gain, spend, strict=True) if g is not None and c is not None]
    total = sum(c for _, c in pairs)
    return (sum(g for g, _ in pairs) / total if total > 0 else None), len(pairs)


def _per_text(value: float | None, n: int, unit: str) -> str:
    if value is None:
        return "—"
    number = f"{value:+,.0f}" if abs(value) >= 1000 else f"{value:+.3g}"
    return f"{number} Δ/{unit} (n={n})"


COST_COLUMNS = {"$ / run": "usd", "GPU-h / run": "gpu_hours", "Δ per $": "gain_per_usd",
                "Δ per GPU-h": "gain_per_gpu_hour"}
"""The leaderboard's cost columns beside each stack (header: column of `cost_of`)."""


def cost_of(rows: Sequence[dict[str, Any]], interval: bool = True) -> dict[str, str]:
    """What the runs `rows` cost and what their gain cost: dollars and GPU-hours per run
    (mean [95% CI] (n); the mean and n alone without `interval`), and summed Δ per summed
    dollar and per summed GPU-hour."""
    gain = [r.get("result_improvement") for r in rows]
    out: dict[str, str] = {}
    for key, unit in (("usd", "$"), ("gpu_hours", "GPU-h")):
        spend = [r.get(key) for r in rows]
        known = [v for v in spend if v is not None]
        if interval:
            s = summarize(spend)
            out[key] = "—" if s.mean is None else s.text(2)
        else:
            out[key] = f"{sum(known) / len(known):.2f} (n={len(known)})" if known else "—"
        out[f"gain_per_{'usd' if key == 'usd' else 'gpu_hour'}"] = _per_text(*_per(gain, spend),
                                                                            unit)
    return out
