"""Tidy tables to files: CSV (the csv module; pandas.read_csv reads it directly), Parquet (when
pyarrow is installed) and Markdown."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from a2rl._errors import A2RLError
from a2rl.schema import RunRecord


def columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Column names in first-seen order over all rows (rows may differ in keys)."""
    cols: dict[str, None] = {}
    for r in rows:
        cols.update(dict.fromkeys(r))
    return list(cols)


def _cell(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return v


def to_csv(rows: Sequence[dict[str, Any]], cols: Sequence[str] | None = None) -> str:
    cols = list(cols or columns(rows))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: _cell(r.get(c)) for c in cols})
    return buf.getvalue()


def to_json(rows: Sequence[dict[str, Any]]) -> str:
    return json.dumps(list(rows), indent=1, default=str, allow_nan=False)


def md_escape(value: Any) -> str:
    """A Markdown table cell: pipes and newlines escaped so agent-written text cannot break
    the table."""
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def to_markdown(rows: Sequence[dict[str, Any]], cols: Sequence[str] | None = None) -> str:
    cols = list(cols or columns(rows))
    if not cols:
        return "(no rows)\n"
    lines = ["| " + " | ".join(md_escape(c) for c in cols) + " |",
             "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(md_escape(_fmt(r.get(c))) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def _fmt(v: Any) -> Any:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.4g}" if abs(v) < 1e-3 and v else f"{v:.2f}" \
            if abs(v) >= 1 else f"{v:.3f}"
    return v


def write_table(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """Write rows as .csv, .parquet, .json or .md, chosen by the file's suffix."""
    suffix = path.suffix.lower()
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".csv":
        path.write_text(to_csv(rows))
    elif suffix == ".json":
        path.write_text(to_json(rows))
    elif suffix == ".md":
        path.write_text(to_markdown(rows))
    elif suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise A2RLError("writing Parquet needs pyarrow, which is not installed",
                            "pip install 'a2rl-bench[parquet]' (or pyarrow), or write a .csv") from exc
        cols = columns(rows)
        table = pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows]) if rows \
            else pa.table({})
        pq.write_table(table, path)
    else:
        raise A2RLError(f"cannot tell the format of {path.name!r} from its suffix",
                        "name the output file .csv, .parquet, .json or .md")
    return path


def cost_columns(record: RunRecord) -> dict[str, Any]:
    """A run's cost as export columns (`cost_usd` is the record's: the CLI's own total, else the
    dated price table; empty when unknown)."""
    cost = record.cost
    row: dict[str, Any] = {
        "input_tokens": cost.input_tokens if cost else None,
        "output_tokens": cost.output_tokens if cost else None,
        "usd_source": cost.usd_source if cost else None,
        "gpus": cost.gpus if cost else None,
        "gpu_hours": round(cost.gpu_hours, 6) if cost else None,
        "agent_gpu_hours": cost.agent_gpu_hours if cost else None,
        "eval_gpu_hours": cost.eval_gpu_hours if cost else None,
        "gpu_util_mean": cost.gpu_util_mean if cost else None,
        "gpu_mem_peak_mb": cost.gpu_mem_peak_mb if cost else None,
        "peak_rss_mb": cost.peak_rss_mb if cost else None,
        "disk_bytes": cost.disk_bytes if cost else None,
    }
    if cost is not None and cost.usd is not None:
        row["cost_usd"] = cost.usd
    return row


def uniform_types(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows whose columns each hold one kind of value: a column mixing text with numbers or
    booleans (per-item answers of different tasks) becomes text, so that Parquet takes it."""
    kinds: dict[str, set[type]] = {}
    for r in rows:
        for k, v in r.items():
            if v is not None:
                kinds.setdefault(k, set()).add(float if type(v) is int else type(v))
    mixed = {k for k, t in kinds.items() if len(t) > 1}
    if not mixed:
        return rows
    return [{k: str(v) if k in mixed and v is not None else v for k, v in r.items()} for r in rows]


def companion(path: Path, name: str) -> Path:
    """`results.csv` → `results.<name>.csv`: the second table written beside the first."""
    return path.with_name(f"{path.stem}.{name}{path.suffix}")
