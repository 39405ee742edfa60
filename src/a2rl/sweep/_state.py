"""A sweep directory and the per-cell state the driver keeps in it (its only writer).

    DIR/sweep.json           the matrix and study this directory belongs to
    DIR/study.json           the study (secret, 0600; never mounted into a sandbox)
    DIR/cells/<id>/cell.json each cell's spec, state and attempts
    DIR/cells/<id>/attempt-N.log   what the cell's process printed
    DIR/baselines/           baselines scored once per (task, options, model, study)
    DIR/runs/<task>/<run_id> the runs themselves (a2rl runs list --runs-dir DIR/runs)
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from a2rl._util import atomic_write_text
from a2rl.sweep._cell import Outcome
from a2rl.sweep._matrix import CellSpec, Matrix

CellStatus = Literal["pending", "running", "finished", "failed"]


class Attempt(BaseModel):
    """One try at a cell."""

    number: int
    """1-based attempt number."""
    run_id: str
    """The run id this attempt used (runs/<task>/<run_id>)."""
    started_at: dt.datetime
    """When the driver submitted it (UTC)."""
    ended_at: dt.datetime | None = None
    """When the driver learnt its end."""
    host: str | None = None
    """The machine it ran on."""
    backend_job: str | None = None
    """The backend's id for it (Slurm job id, Ray task id)."""
    outcome: Outcome | None = None
    """finished (the run closed normally, whatever the agent did), harness_failed (retried),
    refused (a configuration error: never retried) or stopped (the sweep was stopped on
    purpose: resumed, and not counted against `max_attempts`)."""
    reason: str | None = None
    """Why it did not finish (a crash, a killed process, a lost machine, the refusal)."""
    exit_code: int | None = None
    """Exit code of the cell's process (negative: killed by that signal)."""


class CellResult(BaseModel):
    """The finished run, in brief (the full record is its run.json)."""

    run_dir: str
    """The run's directory, relative to the sweep directory."""
    exit_reason: str | None
    """How the agent's phase ended (agent_exited, budget_exhausted, …)."""
    agent_exit_code: int | None
    """The agent's own exit code (its failure is a result, not a harness failure)."""
    baseline: float | None
    """The base model's score."""
    baseline_cached: bool | None
    """Whether the baseline came from the shared cache."""
    best: float | None
    """Best held-out score."""
    improvement: float | None
    """best - baseline."""
    submissions: int
    """Submissions recorded in the ledger."""


class CellState(BaseModel):
    """DIR/cells/<id>/cell.json."""

    id: str
    """The cell's stable id (hash of its spec and repeat index)."""
    spec: CellSpec
    """What the cell runs."""
    status: CellStatus = "pending"
    """pending, running, finished or failed (a harness failure after every attempt)."""
    attempts: list[Attempt] = Field(default_factory=list)
    """Every try, oldest first."""
    result: CellResult | None = None
    """The finished run."""
    error: str | None = None
    """Why the cell failed (status failed), or what keeps a pending cell from starting here
    (left out by `--skip-unready`)."""


class SweepInfo(BaseModel):
    """DIR/sweep.json."""

    name: str
    """The sweep's name."""
    study: str
    """The study's name."""
    study_id: str
    """The study's public id (a sweep directory belongs to one study)."""
    matrix: Matrix
    """The latest matrix run in this directory."""
    updated_at: dt.datetime
    """When the driver last started."""


def cell_dir(root: Path, cell: str) -> Path:
    return root / "cells" / cell


def save_cell(root: Path, state: CellState) -> None:
    atomic_write_text(cell_dir(root, state.id) / "cell.json", state.model_dump_json(indent=1))


def load_cell(root: Path, cell: str) -> CellState | None:
    path = cell_dir(root, cell) / "cell.json"
    if not path.exists():
        return None
    return CellState.model_validate_json(path.read_text())


def load_cells(root: Path) -> list[CellState]:
    out = []
    for path in sorted((root / "cells").glob("*/cell.json")):
        out.append(CellState.model_validate_json(path.read_text()))
    return out


def load_info(root: Path) -> SweepInfo | None:
    path = root / "sweep.json"
    return SweepInfo.model_validate_json(path.read_text()) if path.exists() else None


def save_info(root: Path, info: SweepInfo) -> None:
    atomic_write_text(root / "sweep.json", info.model_dump_json(indent=1))
