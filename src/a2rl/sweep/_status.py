"""`a2rl sweep status DIR`: the matrix with each cell's state."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from a2rl._console import safe
from a2rl._errors import A2RLError
from a2rl.sweep._state import CellState, load_cells, load_info

_STYLE = {"finished": "green", "failed": "red", "running": "cyan", "pending": "yellow"}


def _score(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def _model_label(model: str) -> str:
    """A local folder by its name (a hub id or alias as given)."""
    return Path(model).name if model.startswith(("/", "./", "~")) else model


def status_table(cells: list[CellState]) -> Table:
    table = Table("cell", "task", "model", "agent", "driver", "mode", "rep", "state",
                  "tries", "baseline", "best", "Δ", "agent end / failure")
    for c in sorted(cells, key=lambda c: (c.spec.task_label, c.spec.model, c.spec.agent_label,
                                          c.spec.driver_label, c.spec.mode, c.spec.repeat)):
        r = c.result
        if c.status == "failed" or c.error:  # a failure, or why a pending cell did not start
            note = c.error or ""
        elif r is not None:
            note = (r.exit_reason or "") + (f" (exit {r.agent_exit_code})"
                                            if r.agent_exit_code not in (None, 0) else "")
        else:
            note = next((a.reason or "" for a in reversed(c.attempts) if a.reason), "")
        # Everything but the state comes from files a cell's process wrote: never markup.
        table.add_row(safe(c.id), safe(c.spec.task_label), safe(_model_label(c.spec.model)),
                      safe(c.spec.agent_label), safe(c.spec.driver_label), safe(c.spec.mode),
                      str(c.spec.repeat), f"[{_STYLE[c.status]}]{c.status}[/]",
                      str(len(c.attempts)), _score(r.baseline if r else None),
                      _score(r.best if r else None),
                      _score(r.improvement if r else None, signed=True), safe(note[:160]))
    return table


def show_status(sweep_dir: Path, console: Console) -> list[CellState]:
    info = load_info(sweep_dir)
    cells = load_cells(sweep_dir)
    if info is None and not cells:
        raise A2RLError(f"{sweep_dir} is not a sweep directory (no sweep.json)",
                        "pass the --dir of an `a2rl sweep` (default sweeps/<name>)")
    if info is not None:
        console.print(f"sweep {safe(info.name)} — study {safe(info.study)} ({info.study_id}), "
                      f"backend {info.matrix.backend}, updated {info.updated_at:%Y-%m-%d %H:%M}"
                      " UTC", highlight=False)
    console.print(status_table(cells))
    counts = Counter(c.status for c in cells)
    console.print(", ".join(f"{counts[s]} {s}" for s in ("finished", "running", "pending",
                                                          "failed") if counts[s])
                  + f" of {len(cells)}; runs in {safe(sweep_dir / 'runs')}", highlight=False)
    return cells
