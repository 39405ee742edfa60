"""Backend `local` end to end, on one cell (the fewest runs the claims need): the pool here
runs a scripted agent's cell, whose harness is SIGKILLed mid-run and retried as a new run; the
study's seeds appear in no file the sweep wrote; a rerun skips the finished cell. (The
reference agent runs on Ray and submitit.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_sweep import ARITH, check_finished_sweep, killer_agent, small_matrix

from a2rl.sweep import find_study, parse_matrix, run_sweep

pytestmark = pytest.mark.slow  # real runs: the killed one and its retry


def test_local_sweep_retries_a_killed_cell_keeps_seeds_secret_and_resumes(
        tmp_path: Path, tiny_model: Path) -> None:
    marker = tmp_path / "killed-once"
    matrix = parse_matrix(small_matrix(tiny_model, "local", agent=killer_agent(marker),
                                       tasks=[ARITH], reference=False, repeats=1))
    sweep_dir = tmp_path / "sweep"
    summary = run_sweep(matrix, sweep_dir)
    assert marker.is_dir()  # the killer agent did kill one harness
    assert (summary.finished, summary.failed, summary.retried, summary.baselines) == (1, 0, 1, 1)
    cells = check_finished_sweep(sweep_dir, n_cells=1, n_tasks=1)

    # the killed cell: a harness failure, retried, then finished; its first run is closed
    killed = [c for c in cells if len(c.attempts) == 2]
    assert len(killed) == 1
    first, second = killed[0].attempts
    assert first.outcome == "harness_failed" and "SIGKILL" in (first.reason or "")
    assert second.outcome == "finished" and first.run_id != second.run_id
    dead = json.loads((sweep_dir / "runs" / "arith" / first.run_id / "run.json").read_text())
    assert (dead["status"], dead["exit_reason"]) == ("failed", "harness_died")
    # the agent's own ending is a result: the agent exited by itself
    assert all(c.result and c.result.exit_reason == "agent_exited" for c in cells)

    # the study's held-out seed is in no file the sweep wrote (workspaces included)
    study, _ = find_study(str(sweep_dir / "study.json"))
    seed = str(study.seed("arith", "heldout_seed"))
    for path in sweep_dir.rglob("*"):
        if path.is_file() and path.name != "study.json" and path.stat().st_size < 5_000_000:
            assert seed not in path.read_bytes().decode(errors="replace"), path

    # rerunning skips every finished cell and starts nothing
    runs_before = sorted(p.name for p in (sweep_dir / "runs").glob("*/*"))
    again = run_sweep(matrix, sweep_dir)
    assert (again.skipped, again.finished, again.retried) == (1, 0, 0)
    assert sorted(p.name for p in (sweep_dir / "runs").glob("*/*")) == runs_before
