"""Backend `ray` end to end: a local Ray (started by the sweep, then shut down) runs the small
matrix (2 tasks × reference/scripted × 2 repeats on the tiny model) as Ray tasks with their
num_cpus, to completion; one cell's harness is SIGKILLed inside its Ray task and retried; a
rerun starts nothing (not even Ray)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sweep import check_finished_sweep, killer_agent, small_matrix

from a2rl.sweep import parse_matrix, run_sweep

pytest.importorskip("ray")


pytestmark = pytest.mark.slow  # minutes on a loaded CPU: real runs, one per cell


def test_ray_sweep_runs_the_matrix(tmp_path: Path, tiny_model: Path) -> None:
    import ray

    matrix = parse_matrix(small_matrix(tiny_model, "ray", agent=killer_agent(tmp_path / "k"),
                                       ray={"num_cpus": 2, "num_gpus": 0}))
    summary = run_sweep(matrix, tmp_path / "sweep")
    assert (summary.finished, summary.failed, summary.baselines, summary.retried) == (8, 0, 2, 1)
    cells = check_finished_sweep(tmp_path / "sweep")
    killed = [c for c in cells if len(c.attempts) == 2]
    assert len(killed) == 1 and killed[0].spec.agent_label == "scripted"
    assert "SIGKILL" in (killed[0].attempts[0].reason or "")
    assert all(a.backend_job for c in cells for a in c.attempts)  # Ray task ids
    assert not ray.is_initialized()  # the sweep started Ray, so it shut it down
    again = run_sweep(matrix, tmp_path / "sweep")
    assert (again.skipped, again.finished) == (8, 0)
