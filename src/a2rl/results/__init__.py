"""Many runs as tables: load a2rl runs and imported runs into tidy rows (one per run, one per
submission), aggregate repeats per cell with bootstrap intervals under a documented policy for
audit-flagged and unsandboxed runs, and compute the cross-run strategy tables of the trajectory study. The
long tables (per evaluated item, message and agent event) come as pandas DataFrames too
(`samples_df`, `messages_df`, `events_df`, `runs_df`), like inspect_ai's."""

from __future__ import annotations

from a2rl.results._aggregate import (
    CELL_KEYS,
    FLAG_POLICIES,
    PROCESS_METRICS,
    SCORE_METRICS,
    Cell,
    FlagPolicy,
    Policy,
    Summary,
    aggregate,
    baselines,
    bootstrap_ci,
    heldout_group,
    marks,
    summarize,
)
from a2rl.results._api import (
    TABLE_NAMES,
    events_df,
    export_results,
    messages_df,
    runs_df,
    samples_df,
)
from a2rl.results._export import companion, to_csv, to_json, to_markdown, write_table
from a2rl.results._load import (
    AUDIT_FLAG_KINDS,
    LoadedRun,
    agent_stack,
    audit_flags,
    find_run_dirs,
    load_one,
    load_runs,
    relpath,
    run_row,
    stack_of,
    submission_rows,
    sweep_labels,
)
from a2rl.results._strategy import (
    change_rates,
    convergence,
    methods_attempted_adopted,
    phase_distribution,
    workspace_stats,
)

__all__ = [
    "AUDIT_FLAG_KINDS", "CELL_KEYS", "FLAG_POLICIES", "PROCESS_METRICS", "SCORE_METRICS",
    "TABLE_NAMES",
    "Cell", "FlagPolicy", "LoadedRun", "Policy", "Summary", "agent_stack", "aggregate",
    "audit_flags", "baselines", "bootstrap_ci", "change_rates", "companion", "convergence",
    "events_df", "export_results", "find_run_dirs", "heldout_group", "load_one", "load_runs", "marks",
    "messages_df", "methods_attempted_adopted", "phase_distribution", "relpath", "run_row",
    "runs_df", "samples_df", "stack_of",
    "submission_rows", "summarize", "sweep_labels", "to_csv", "to_json", "to_markdown",
    "workspace_stats", "write_table",
]
