"""`a2rl results export`: runs → tidy files; and the same tables as pandas DataFrames
(`runs_df`, `samples_df`, `messages_df`, `events_df`, like inspect_ai's dataframes)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a2rl._errors import A2RLError
from a2rl.results._aggregate import Policy, aggregate
from a2rl.results._export import columns, companion, cost_columns, uniform_types, write_table
from a2rl.results._load import LoadedRun, load_runs, run_row, submission_rows
from a2rl.results._tables import TABLES

if TYPE_CHECKING:
    import pandas as pd

TABLE_NAMES: tuple[str, ...] = tuple(TABLES)
"""The long tables `a2rl results export` can write beside the runs table (`--tables`; the
command writes all of them unless told otherwise)."""


def _loaded(paths: Sequence[Path]) -> list[LoadedRun]:
    runs, bad = load_runs(paths)
    if not runs:
        raise A2RLError(f"no readable run under {', '.join(str(p) for p in paths)}"
                        + (f" ({len(bad)} unreadable: {bad[0][0]}: {bad[0][1]})" if bad else ""),
                        "pass runs folders (./runs), run directories or a sweep's output folder")
    return runs


def export_results(paths: Sequence[Path], output: Path, *, cells: bool = True,
                   audit: str = "exclude", unsandboxed: str = "exclude",
                   tables: Sequence[str] = ()) -> list[tuple[Path, int]]:
    """Write one row per run to `output` and one per submission beside it
    (`<stem>.submissions<suffix>`), and, with `cells`, the per-cell statistics
    (`<stem>.cells<suffix>`), and each of `tables` (`<stem>.samples<suffix>`: one row per
    evaluated item; `.messages`: per message; `.events`: per agent event). Every run is in the
    runs table, with its marks and whether the policy counts it (`counted`); the policy shapes
    only the cell statistics. Returns (path, rows) per file written."""
    policy = Policy(audit=audit, unsandboxed=unsandboxed)  # type: ignore[arg-type]
    if output.suffix.lower() not in (".csv", ".parquet", ".json"):
        raise A2RLError(f"cannot tell the format of {output.name!r}",
                        "name the output results.csv, results.parquet or results.json")
    if unknown := [t for t in tables if t not in TABLES]:
        raise A2RLError(f"no table named {', '.join(map(repr, unknown))}",
                        f"choose among {', '.join(TABLES)}")
    runs = _loaded(paths)
    rows = [run_row(r) | cost_columns(r.record) for r in runs]
    for row in rows:
        row["shown"] = policy.shown(row)
        row["counted"] = policy.counted(row)
    subs = [s for r in runs for s in submission_rows(r)]
    written = [(write_table(rows, output), len(rows)),
               (write_table(subs, companion(output, "submissions")), len(subs))]
    if cells:
        table = [c.row() for c in aggregate(rows, policy)]
        written.append((write_table(table, companion(output, "cells")), len(table)))
    for name in tables:
        long = uniform_types([row for r in runs for row in TABLES[name](r)])
        written.append((write_table(long, companion(output, name)), len(long)))
    return written


def _paths(paths: str | Path | Sequence[str | Path]) -> list[Path]:
    return [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    try:
        import pandas as pd
    except ImportError as exc:
        raise A2RLError("the dataframes need pandas, which is not installed",
                        "pip install 'a2rl-bench[parquet]' (or pandas), or use "
                        "`a2rl results export` for CSV") from exc
    return pd.DataFrame(rows, columns=columns(rows))


def runs_df(paths: str | Path | Sequence[str | Path]) -> pd.DataFrame:
    """One row per run (the runs table of `a2rl results export`, without the policy marks)."""
    return _frame([run_row(r) | cost_columns(r.record) for r in _loaded(_paths(paths))])


def samples_df(paths: str | Path | Sequence[str | Path]) -> pd.DataFrame:
    """One row per evaluated item of every run under `paths` (runs folders, run directories
    or sweep folders): run, submission (`baseline` for the base model), item id, prompt,
    completion, extracted answer, reference answer, score and the task's per-item metrics."""
    return _frame([row for r in _loaded(_paths(paths)) for row in TABLES["samples"](r)])


def messages_df(paths: str | Path | Sequence[str | Path]) -> pd.DataFrame:
    """One row per message of every run's agent: turn, time, role (system, user, assistant,
    tool), text, and for tool results the tool, its command, exit code and error flag."""
    return _frame([row for r in _loaded(_paths(paths)) for row in TABLES["messages"](r)])


def events_df(paths: str | Path | Sequence[str | Path]) -> pd.DataFrame:
    """One row per agent event of every run (agent/events.jsonl flattened, outputs included)."""
    return _frame([row for r in _loaded(_paths(paths)) for row in TABLES["events"](r)])
