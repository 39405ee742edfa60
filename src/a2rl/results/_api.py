"""`a2rl results export`: runs → tidy files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl.results._aggregate import Policy, aggregate
from a2rl.results._export import companion, write_table
from a2rl.results._load import load_runs, run_row, submission_rows


def export_results(paths: Sequence[Path], output: Path, *, cells: bool = True,
                   audit: str = "exclude", unsandboxed: str = "exclude"
                   ) -> list[tuple[Path, int]]:
    """Write one row per run to `output` and one per submission beside it
    (`<stem>.submissions<suffix>`), and, with `cells`, the per-cell statistics
    (`<stem>.cells<suffix>`). Every run is in the runs table, with its marks and whether the
    policy counts it (`counted`); the policy shapes only the cell statistics. Returns
    (path, rows) per file written."""
    policy = Policy(audit=audit, unsandboxed=unsandboxed)  # type: ignore[arg-type]
    if output.suffix.lower() not in (".csv", ".parquet", ".json"):
        raise A2RLError(f"cannot tell the format of {output.name!r}",
                        "name the output results.csv, results.parquet or results.json")
    runs, bad = load_runs(paths)
    if not runs:
        raise A2RLError(f"no readable run under {', '.join(str(p) for p in paths)}"
                        + (f" ({len(bad)} unreadable: {bad[0][0]}: {bad[0][1]})" if bad else ""),
                        "pass runs folders (./runs), run directories or a sweep's output folder")
    rows = [run_row(r) for r in runs]
    for row in rows:
        row["shown"] = policy.shown(row)
        row["counted"] = policy.counted(row)
    subs = [s for r in runs for s in submission_rows(r)]
    written = [(write_table(rows, output), len(rows)),
               (write_table(subs, companion(output, "submissions")), len(subs))]
    if cells:
        table = [c.row() for c in aggregate(rows, policy)]
        written.append((write_table(table, companion(output, "cells")), len(table)))
    return written
