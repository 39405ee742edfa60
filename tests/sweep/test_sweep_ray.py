"""Backend `ray` end to end, as small as the claims allow: a local Ray (started by the sweep,
then shut down) runs 2 cells (the reference agent and a scripted `cmd:` agent, one task, one
repeat, on the tiny model) as Ray tasks with their num_cpus, against one shared baseline; the
scripted cell's harness is SIGKILLed inside its Ray task and retried; a rerun starts nothing
(not even Ray). The 2 tasks × 2 repeats of the issue's matrix add runs, not claims: repeats
and several baseline groups are covered by test_sweep.py and test_sweep_local.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sweep import ARITH, check_finished_sweep, killer_agent, small_matrix

from a2rl.sweep import parse_matrix, run_sweep

pytest.importorskip("ray")


pytestmark = pytest.mark.slow  # real runs, one per cell (about a minute each on a loaded CPU)


def test_ray_sweep_runs_the_matrix(tmp_path: Path, tiny_model: Path) -> None:
    import ray

    matrix = parse_matrix(small_matrix(tiny_model, "ray", agent=killer_agent(tmp_path / "k"),
                                       tasks=[ARITH], repeats=1,
                                       ray={"num_cpus": 2, "num_gpus": 0}))
    summary = run_sweep(matrix, tmp_path / "sweep")
    assert (summary.finished, summary.failed, summary.baselines, summary.retried) == (2, 0, 1, 1)
    cells = check_finished_sweep(tmp_path / "sweep", n_cells=2, n_tasks=1)
    killed = [c for c in cells if len(c.attempts) == 2]
    assert len(killed) == 1 and killed[0].spec.agent_label == "scripted"
    assert "SIGKILL" in (killed[0].attempts[0].reason or "")
    assert all(a.backend_job for c in cells for a in c.attempts)  # Ray task ids
    assert len({a.backend_job for c in cells for a in c.attempts}) == 3
    reference = next(c for c in cells if c.spec.agent_label == "reference")
    assert reference.result is not None and reference.result.submissions >= 1
    assert not ray.is_initialized()  # the sweep started Ray, so it shut it down
    again = run_sweep(matrix, tmp_path / "sweep")
    assert (again.skipped, again.finished) == (2, 0)
    assert not ray.is_initialized()  # nothing to run: Ray was not started
