"""Per-cell statistics over repeated runs: n, mean, standard deviation and a seeded percentile
bootstrap 95 % interval of the mean, with the audit/isolation policy deciding which runs count.

A cell is one (agent stack, task, mode, model) scored on one held-out set; its runs are the
repeats. Every figure comes with the number of runs it is computed from.

Scores are comparable only over the same held-out items: a run row's `heldout` (the task
fingerprint run.json records: task, version, options and the installation's held-out draw) is
part of every grouping, so runs scored on different sets land in different cells, and a run
whose record identifies no set (`heldout` None) is a group of its own. Rows without a `heldout`
column at all (hand-built tables) are taken to share one set.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from a2rl._errors import A2RLError
from a2rl.results._load import PROVENANCE_COLUMNS

FlagPolicy = Literal["exclude", "include", "drop"]
FLAG_POLICIES: tuple[str, ...] = ("exclude", "include", "drop")

CELL_KEYS: tuple[str, ...] = ("stack", "task", "mode", "model")
SCORE_METRICS: tuple[str, ...] = ("result", "result_improvement", "best", "improvement")
"""`result`: the run's headline (the hidden final score of a `--final hidden` run, else its
best submission); `best`: the best submission the agent got feedback on."""
PROCESS_METRICS: tuple[str, ...] = ("valid_rate", "time_to_first_improvement_s", "time_to_best_s",
                                    "submissions")


@dataclass(frozen=True)
class Policy:
    """Which runs count toward means and intervals.

    `audit` applies to runs with an audit flag (contamination, privileged API, other models or
    LLM APIs), `unsandboxed` to runs without OS isolation. Each is one of
    - `exclude` (default): the run is shown and marked in every table, but left out of means;
    - `include`: shown, marked, and counted;
    - `drop`: left out of the tables altogether (its id is still listed as dropped).
    """

    audit: FlagPolicy = "exclude"
    unsandboxed: FlagPolicy = "exclude"

    def __post_init__(self) -> None:
        for name in ("audit", "unsandboxed"):
            if getattr(self, name) not in FLAG_POLICIES:
                raise A2RLError(f"{name} policy {getattr(self, name)!r} is unknown",
                                f"use one of {', '.join(FLAG_POLICIES)}")

    def _rules(self, row: dict[str, Any]) -> list[FlagPolicy]:
        rules: list[FlagPolicy] = []
        if row.get("audit_flags"):
            rules.append(self.audit)
        if row.get("sandboxed") is False:
            rules.append(self.unsandboxed)
        return rules

    def shown(self, row: dict[str, Any]) -> bool:
        return "drop" not in self._rules(row)

    def counted(self, row: dict[str, Any]) -> bool:
        # A run the harness did not finish (it crashed or its machine died: a sweep retries
        # the cell as a new run; or it still runs) measured nothing about the agent: its
        # missing best and zero submissions are no result. Never counted, whatever the policy.
        if not finished(row):
            return False
        return all(rule == "include" for rule in self._rules(row))

    def describe(self) -> str:
        words = {"exclude": "shown and marked, excluded from means",
                 "include": "shown, marked and counted",
                 "drop": "left out of every table"}
        return (f"audit-flagged runs: {words[self.audit]}; "
                f"unsandboxed runs: {words[self.unsandboxed]}; "
                "runs the harness did not finish: shown and marked, never counted; "
                "runs stopped on purpose (a sweep to resume): in no cell or baseline")


def finished(row: dict[str, Any]) -> bool:
    """Whether the harness finished the run (an imported run without a status counts as
    finished: its harness reported a result)."""
    return row.get("status") in (None, "finished")


def stopped(row: dict[str, Any]) -> bool:
    """Whether its operator stopped the run on purpose (a sweep stopped, to be resumed): it
    counts like a run that never ran, in no cell, baseline or failure count."""
    return row.get("status") == "stopped"


def marks(row: dict[str, Any]) -> list[str]:
    """The markers a run carries in every table: its audit flags, `unsandboxed`, `stopped`,
    and `harness-failed` / `unfinished` for a run the harness did not finish."""
    out = [f for f in str(row.get("audit_flags") or "").split(",") if f]
    if row.get("sandboxed") is False:
        out.append("unsandboxed")
    if stopped(row):
        out.append("stopped")
    elif not finished(row):
        out.append("harness-failed" if row.get("status") == "failed" else "unfinished")
    return out


@dataclass(frozen=True)
class Summary:
    """Statistics of one metric over the counted runs of a cell."""

    n: int
    """Runs with a value for this metric."""
    mean: float | None
    sd: float | None
    """Sample standard deviation (ddof = 1); None for fewer than 2 runs."""
    ci_low: float | None
    """Percentile-bootstrap 95 % interval of the mean; None for fewer than 2 runs."""
    ci_high: float | None

    def text(self, digits: int = 2, *, signed: bool = False) -> str:
        """`mean [lo, hi] (n=k)` for tables; `— (n=0)` without data."""
        if self.mean is None:
            return f"— (n={self.n})"
        fmt = f"{{:{'+' if signed else ''}.{digits}f}}"
        ci = "" if self.ci_low is None or self.ci_high is None else \
            f" [{fmt.format(self.ci_low)}, {fmt.format(self.ci_high)}]"
        return f"{fmt.format(self.mean)}{ci} (n={self.n})"


def heldout_group(row: dict[str, Any]) -> str:
    """The held-out set a run was scored on, as a grouping key: its fingerprint; for a run
    whose record names none, a key of its own (it pools with no other run)."""
    if "heldout" not in row:
        return ""
    fp = row.get("heldout")
    return str(fp) if fp else f"unidentified:{row.get('run_id')}"


def bootstrap_ci(values: Sequence[float], *, level: float = 0.95, n_resamples: int = 10_000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean: resample the runs with replacement
    `n_resamples` times (seeded, so tables are reproducible) and take the quantiles."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        raise ValueError("a bootstrap interval needs at least 2 values")
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    chunk = max(1, 2_000_000 // x.size)  # bound the index matrix's memory for large cells
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = rng.integers(0, x.size, size=(stop - start, x.size))
        means[start:stop] = x[idx].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def summarize(values: Iterable[float | None], *, seed: int = 0, n_resamples: int = 10_000
              ) -> Summary:
    """n, mean, sd and bootstrap 95 % CI of the non-missing values."""
    x = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not x:
        return Summary(0, None, None, None, None)
    mean = float(np.mean(x))
    if len(x) < 2:
        return Summary(1, mean, None, None, None)
    lo, hi = bootstrap_ci(x, seed=seed, n_resamples=n_resamples)
    return Summary(len(x), mean, float(np.std(x, ddof=1)), lo, hi)


@dataclass
class Cell:
    """One (stack, task, mode, model) cell: its runs and the statistics of each metric."""

    key: dict[str, Any]
    runs: list[dict[str, Any]]
    """Every shown run of the cell (counted or not)."""
    counted: list[dict[str, Any]]
    stats: dict[str, Summary]
    heldout: str = ""
    """The held-out set every run of the cell was scored on (`heldout_group`)."""

    @property
    def excluded(self) -> list[dict[str, Any]]:
        ids = {id(r) for r in self.counted}
        return [r for r in self.runs if id(r) not in ids]

    def mixed_provenance(self) -> dict[str, int]:
        """Provenance columns on which the cell's runs disagree -> how many values they hold
        (runs made by different harness or CLI versions, driver models or task data)."""
        out: dict[str, int] = {}
        for name in PROVENANCE_COLUMNS:
            values = {r.get(name) for r in self.runs if r.get(name) is not None}
            if len(values) > 1:
                out[name] = len(values)
        return out

    def mark_text(self) -> str:
        """`contamination×1, unsandboxed×2` over the cell's shown runs, then the provenance
        the runs disagree on (`mixed agent_cli_version: 2 values`); '' when clean."""
        counts: dict[str, int] = {}
        for r in self.runs:
            for m in marks(r):
                counts[m] = counts.get(m, 0) + 1
        found = [f"{k}×{v}" for k, v in sorted(counts.items())]
        found += [f"mixed {k}: {v} values" for k, v in self.mixed_provenance().items()]
        return ", ".join(found)

    def row(self) -> dict[str, Any]:
        """The cell as a flat table row."""
        out: dict[str, Any] = dict(self.key)
        out.update(heldout=self.heldout, runs=len(self.runs), counted=len(self.counted),
                   excluded=len(self.excluded), marks=self.mark_text(),
                   levels=",".join(sorted({str(r.get("level")) for r in self.runs if r.get("level")})))
        for name, s in self.stats.items():
            out.update({f"{name}_n": s.n, f"{name}_mean": s.mean, f"{name}_sd": s.sd,
                        f"{name}_ci_low": s.ci_low, f"{name}_ci_high": s.ci_high})
        return out


def aggregate(rows: Iterable[dict[str, Any]], policy: Policy | None = None, *,
              keys: Sequence[str] = CELL_KEYS,
              metrics: Sequence[str] = SCORE_METRICS + PROCESS_METRICS,
              seed: int = 0, n_resamples: int = 10_000) -> list[Cell]:
    """Group run rows into cells by `keys` and the held-out set, and summarise each metric over
    the counted runs. The bootstrap seed of each cell is derived from `seed` and the cell's
    position, so a table is the same every time it is built from the same runs. A run stopped
    on purpose is in no cell."""
    policy = policy or Policy()
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        if policy.shown(row) and not stopped(row):
            groups.setdefault((*(row.get(k) for k in keys), heldout_group(row)), []).append(row)
    cells: list[Cell] = []
    for i, (key, runs) in enumerate(sorted(groups.items(), key=lambda kv: [str(v) for v in kv[0]])):
        counted = [r for r in runs if policy.counted(r)]
        stats = {m: summarize((r.get(m) for r in counted), seed=seed + i, n_resamples=n_resamples)
                 for m in metrics}
        cells.append(Cell(dict(zip(keys, key[:-1], strict=True)), runs, counted, stats,
                          heldout=key[-1]))
    return cells


def baselines(rows: Iterable[dict[str, Any]], policy: Policy | None = None
              ) -> dict[tuple[str, str, str], Summary]:
    """The base model's score per (task, model, held-out set) over the shown runs (a baseline
    does not depend on the agent, so flagged runs count here; runs stopped on purpose do not)."""
    policy = policy or Policy()
    groups: dict[tuple[str, str, str], list[float | None]] = {}
    for r in rows:
        if policy.shown(r) and not stopped(r):
            groups.setdefault((str(r.get("task")), str(r.get("model")), heldout_group(r)),
                              []).append(r.get("baseline"))
    return {k: summarize(v) for k, v in sorted(groups.items())}
