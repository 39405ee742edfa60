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


def companion(path: Path, name: str) -> Path:
    """`results.csv` → `results.<name>.csv`: the second table written beside the first."""
    return path.with_name(f"{path.stem}.{name}{path.suffix}")
