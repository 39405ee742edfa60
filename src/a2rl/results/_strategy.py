"""Cross-run strategy analysis (the trajectory study) and workspace statistics (the benchmark
paper, Table 11), from each run's analysis.json: initial-strategy convergence C_G, strategy change
rate and persistence, time per phase, method attempted vs adopted.

These describe what agents did, not what they scored, so every shown run counts (the flag
policy's `drop` still removes a run); flagged runs are marked in the group's row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from a2rl.results._aggregate import Policy, marks, summarize
from a2rl.results._load import LoadedRun, run_row, stack_of

GroupFn = Callable[[LoadedRun], str]


def by_stack(run: LoadedRun) -> str:
    return stack_of(run)


def _shown(runs: Sequence[LoadedRun], policy: Policy) -> list[tuple[LoadedRun, dict[str, Any]]]:
    pairs = [(r, run_row(r)) for r in runs]
    return [(r, row) for r, row in pairs if policy.shown(row)]


def _groups(runs: Sequence[LoadedRun], policy: Policy, group: GroupFn
            ) -> dict[str, list[tuple[LoadedRun, dict[str, Any]]]]:
    out: dict[str, list[tuple[LoadedRun, dict[str, Any]]]] = {}
    for r, row in _shown(runs, policy):
        out.setdefault(group(r), []).append((r, row))
    return dict(sorted(out.items()))


def _mark_text(rows: list[dict[str, Any]]) -> str:
    c = Counter(m for row in rows for m in marks(row))
    return ", ".join(f"{k}×{v}" for k, v in sorted(c.items()))


def convergence(runs: Sequence[LoadedRun], policy: Policy | None = None,
                group: GroupFn = by_stack) -> list[dict[str, Any]]:
    """C_G per group: the largest share of the group's runs whose first verified training
    experiment uses the same strategy k (runs without any experiment are counted apart)."""
    rows: list[dict[str, Any]] = []
    for name, members in _groups(runs, policy or Policy(), group).items():
        firsts = [r.analysis.experiments[0].strategy for r, _ in members
                  if r.analysis and r.analysis.experiments]
        counts = Counter(firsts)
        top, top_n = counts.most_common(1)[0] if counts else (None, 0)
        rows.append({"group": name, "runs": len(members), "runs_with_experiments": len(firsts),
                     "top_first_strategy": top,
                     "C_G": top_n / len(firsts) if firsts else None,
                     "first_strategies": ", ".join(f"{k} {v}" for k, v in counts.most_common()),
                     "marks": _mark_text([row for _, row in members])})
    return rows


def change_rates(runs: Sequence[LoadedRun], policy: Policy | None = None,
                 group: GroupFn = by_stack) -> list[dict[str, Any]]:
    """R_change per group = strategy changes / adjacent experiment pairs, pooled over the
    group's runs (the trajectory study pools pairs); R_persist = 1 − R_change. The per-run mean and its
    interval are given beside it, since a few long runs dominate the pooled figure."""
    rows: list[dict[str, Any]] = []
    for name, members in _groups(runs, policy or Policy(), group).items():
        pairs = changes = 0
        per_run: list[float | None] = []
        for r, _ in members:
            if not r.analysis:
                continue
            n_pairs = max(0, len(r.analysis.experiments) - 1)
            pairs += n_pairs
            changes += r.analysis.strategy_changes
            per_run.append(r.analysis.change_rate)
        s = summarize(per_run)
        rate = changes / pairs if pairs else None
        rows.append({"group": name, "runs": len(members), "adjacent_pairs": pairs,
                     "strategy_changes": changes, "R_change": rate,
                     "R_persist": None if rate is None else 1 - rate,
                     "per_run_change_rate": s.text(3), "per_run_n": s.n,
                     "marks": _mark_text([row for _, row in members])})
    return rows


def phase_seconds(run: LoadedRun) -> dict[str, float]:
    """Time per phase of a run: by agent turns when the launcher wrote an event log (the trajectory study's
    per-turn labels), else by the programs of the exec trace."""
    a = run.analysis
    if a is None:
        return {}
    return dict(a.turn_phase_seconds or a.phase_seconds)


def phase_distribution(runs: Sequence[LoadedRun], policy: Policy | None = None,
                       group: GroupFn = by_stack) -> list[dict[str, Any]]:
    """Per group and phase: the mean share of a run's phase time spent in it, with n (runs
    that have phase times) and the bootstrap interval over runs."""
    rows: list[dict[str, Any]] = []
    for name, members in _groups(runs, policy or Policy(), group).items():
        shares: list[dict[str, float]] = []
        for r, _ in members:
            ph = phase_seconds(r)
            total = sum(ph.values())
            if total > 0:
                shares.append({k: v / total for k, v in ph.items()})
        phases = sorted({k for s in shares for k in s})
        for phase in phases:
            s = summarize([sh.get(phase, 0.0) for sh in shares])
            rows.append({"group": name, "phase": phase, "n": s.n, "share_mean": s.mean,
                         "share_ci_low": s.ci_low, "share_ci_high": s.ci_high,
                         "seconds_mean": float(np.mean([phase_seconds(r).get(phase, 0.0)
                                                        for r, _ in members
                                                        if sum(phase_seconds(r).values()) > 0]))})
    return rows


def methods_attempted_adopted(runs: Sequence[LoadedRun], policy: Policy | None = None,
                              group: GroupFn | None = None) -> list[dict[str, Any]]:
    """Per method (and group, when given): in how many runs it was attempted (a training the
    run launched used it) and in how many the best submission's code used it (the benchmark paper,
    Table 18)."""
    pol = policy or Policy()
    grouped = _groups(runs, pol, group) if group else {"all": _shown(runs, pol)}
    rows: list[dict[str, Any]] = []
    for name, members in grouped.items():
        attempted: Counter[str] = Counter()
        adopted: Counter[str] = Counter()
        analyzed = 0
        for r, _ in members:
            if not r.analysis:
                continue
            analyzed += 1
            attempted.update(set(r.analysis.methods_attempted))
            adopted.update(set(r.analysis.methods_in_best))
        for method in sorted(set(attempted) | set(adopted), key=lambda m: (-attempted[m], m)):
            rows.append({"group": name, "method": method, "attempted": attempted[method],
                         "adopted": adopted[method], "runs": analyzed,
                         "adoption_rate": adopted[method] / attempted[method]
                         if attempted[method] else None})
    return rows


WORKSPACE_METRICS: tuple[str, ...] = ("submissions", "code_files", "model_versions",
                                      "zero_score_rate", "best_at_submission")


def workspace_stats(runs: Sequence[LoadedRun], policy: Policy | None = None,
                    group: GroupFn = by_stack) -> list[dict[str, Any]]:
    """The benchmark paper's workspace statistics per group: mean submissions, distinct code files, model
    versions, zero-score rate and best@submission, each with its n."""
    rows: list[dict[str, Any]] = []
    for name, members in _groups(runs, policy or Policy(), group).items():
        out: dict[str, Any] = {"group": name, "runs": len(members)}
        for metric in WORKSPACE_METRICS:
            s = summarize(row.get(metric) for _, row in members)
            out[f"{metric}_mean"] = s.mean
            out[f"{metric}_n"] = s.n
        out["marks"] = _mark_text([row for _, row in members])
        rows.append(out)
    return rows
