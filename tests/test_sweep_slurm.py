"""Backend `slurm` end to end through submitit's local executor (`slurm.cluster: local`): one
submitit job per cell and per baseline, to completion, then a rerun that submits nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sweep import check_finished_sweep, small_matrix

from a2rl.sweep import parse_matrix, run_sweep

pytest.importorskip("submitit")


pytestmark = pytest.mark.slow  # minutes on a loaded CPU: real runs, one per cell


def test_submitit_sweep_runs_the_matrix(tmp_path: Path, tiny_model: Path) -> None:
    matrix = parse_matrix(small_matrix(tiny_model, "slurm", max_parallel=2,
                                       slurm={"cluster": "local", "time": "20m"}))
    sweep_dir = tmp_path / "sweep"
    summary = run_sweep(matrix, sweep_dir)
    assert (summary.finished, summary.failed, summary.baselines) == (8, 0, 2)
    cells = check_finished_sweep(sweep_dir)
    # one submitit job per attempt: its id is recorded, its folder holds the job's files
    jobs = {a.backend_job for c in cells for a in c.attempts}
    assert None not in jobs and len(jobs) == 8
    assert all((sweep_dir / "slurm" / str(j)).is_dir() for j in jobs)
    again = run_sweep(matrix, sweep_dir)
    assert (again.skipped, again.finished) == (8, 0)
    # one folder per submitit job: 8 cells + 2 baselines (submitit also leaves the
    # unformatted `%j` folder it was given)
    assert len([p for p in (sweep_dir / "slurm").iterdir() if p.name.isdigit()]) == 10
