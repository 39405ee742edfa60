"""Backend `slurm` end to end through submitit's local executor (`slurm.cluster: local`), as
small as the claims allow: one submitit job per attempt and per baseline for 2 cells (the
reference agent and a scripted `cmd:` agent, one task, one repeat, on the tiny model) against
one shared baseline; the scripted cell's harness is SIGKILLed inside its job and retried as a
new job; a rerun submits nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sweep import ARITH, check_finished_sweep, killer_agent, small_matrix

from a2rl.sweep import parse_matrix, run_sweep

pytest.importorskip("submitit")


pytestmark = pytest.mark.slow  # real runs, one per cell (about a minute each on a loaded CPU)


def test_submitit_sweep_runs_the_matrix(tmp_path: Path, tiny_model: Path) -> None:
    matrix = parse_matrix(small_matrix(tiny_model, "slurm", agent=killer_agent(tmp_path / "k"),
                                       tasks=[ARITH], repeats=1, max_parallel=2,
                                       slurm={"cluster": "local", "time": "20m"}))
    sweep_dir = tmp_path / "sweep"
    summary = run_sweep(matrix, sweep_dir)
    assert (summary.finished, summary.failed, summary.baselines, summary.retried) == (2, 0, 1, 1)
    cells = check_finished_sweep(sweep_dir, n_cells=2, n_tasks=1)
    killed = [c for c in cells if len(c.attempts) == 2]
    assert len(killed) == 1 and killed[0].spec.agent_label == "scripted"
    first, second = killed[0].attempts
    assert first.outcome == "harness_failed" and "SIGKILL" in (first.reason or "")
    assert second.outcome == "finished" and first.backend_job != second.backend_job
    # one submitit job per attempt: its id is recorded, its folder holds the job's files
    jobs = {a.backend_job for c in cells for a in c.attempts}
    assert None not in jobs and len(jobs) == 3
    assert all((sweep_dir / "slurm" / str(j)).is_dir() for j in jobs)
    again = run_sweep(matrix, sweep_dir)
    assert (again.skipped, again.finished) == (2, 0)
    # one folder per submitit job: 3 cell attempts + 1 baseline (submitit also leaves the
    # unformatted `%j` folder it was given)
    assert len([p for p in (sweep_dir / "slurm").iterdir() if p.name.isdigit()]) == 4
