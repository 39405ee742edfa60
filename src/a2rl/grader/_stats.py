"""Confidence intervals for a score, and whether a submission differs from the baseline.

- Every held-out item gets one value in [0, 1] (its verdict or reward). When all values are 0 or 1
  the interval is Wilson's score interval for a binomial proportion; otherwise it is a percentile
  bootstrap over items (resampling items with replacement, a fixed number of resamples, a seed
  derived from the values so the same evaluation always gets the same interval).
- Some task scores are not a plain mean of item values (AlpacaEval's length-controlled win rate).
  Then the bootstrap interval of the item mean is shifted by (score − 100 × mean) and the method
  says so: an approximation, labelled as one.
- `significant`: when both the submission and the baseline have per-item values on the same items
  (same keyed ids), a paired bootstrap over the per-item differences: significant when the 95 %
  interval of the mean difference excludes 0. Without paired values: significant when the
  baseline score lies outside the submission's interval. A +0.5 from flipping one of 200 items is
  therefore never significant.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

Z95 = 1.959963984540054
BOOTSTRAP_RESAMPLES = 2000

CIMethod = Literal["wilson", "bootstrap", "bootstrap-shifted"]


class ScoreInterval(BaseModel):
    """A 95 % confidence interval of a score (0–100)."""

    low: float
    """Lower bound (0–100)."""
    high: float
    """Upper bound (0–100)."""
    method: CIMethod
    """wilson (0/1 items), bootstrap (continuous item values) or bootstrap-shifted (the score is
    not a mean of item values; the item-mean interval moved onto the score)."""
    n_items: int
    """Items the interval is computed from."""


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion, in [0, 1]."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _rng(values: Sequence[float], tag: str) -> random.Random:
    digest = hashlib.sha256((tag + ",".join(f"{v:.6g}" for v in values)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def bootstrap_mean(values: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES,
                   tag: str = "") -> tuple[float, float]:
    """Percentile bootstrap 95 % interval of the mean of `values`."""
    n = len(values)
    if n == 0:
        return 0.0, 0.0
    if n == 1:
        return values[0], values[0]
    rng = _rng(values, tag)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[min(resamples - 1, int(0.975 * resamples))]


def score_interval(values: Sequence[float], score: float) -> ScoreInterval | None:
    """The 95 % interval of `score` from its per-item values (None without values)."""
    n = len(values)
    if n == 0:
        return None
    mean = sum(values) / n
    shift = score - 100.0 * mean
    binary = all(v in (0.0, 1.0) for v in values)
    if abs(shift) <= 0.01 and binary:
        lo, hi = wilson(sum(values), n)
        method: CIMethod = "wilson"
    else:
        lo, hi = bootstrap_mean(values)
        method = "bootstrap" if abs(shift) <= 0.01 else "bootstrap-shifted"
    low = min(max(0.0, 100.0 * lo + (shift if method == "bootstrap-shifted" else 0.0)), score)
    high = max(min(100.0, 100.0 * hi + (shift if method == "bootstrap-shifted" else 0.0)), score)
    return ScoreInterval(low=round(low, 4), high=round(high, 4), method=method, n_items=n)


def paired_difference(sub: dict[str, float], base: dict[str, float]) -> tuple[float, float] | None:
    """Paired bootstrap 95 % interval (in points, 0–100 scale) of the mean per-item difference
    submission − baseline over the items both have; None when they share no items."""
    keys = sorted(set(sub) & set(base))
    if not keys or len(keys) != len(sub) or len(keys) != len(base):
        return None
    diffs = [sub[k] - base[k] for k in keys]
    lo, hi = bootstrap_mean(diffs, tag="paired")
    return round(100.0 * lo, 4), round(100.0 * hi, 4)


def is_significant(interval: ScoreInterval | None, baseline_score: float,
                   paired: tuple[float, float] | None) -> bool | None:
    """See the module docstring; None when nothing can be said (no per-item values)."""
    if paired is not None:
        return paired[0] > 0 or paired[1] < 0
    if interval is None:
        return None
    return not (interval.low <= baseline_score <= interval.high)
