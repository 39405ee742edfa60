"""A sweep stopped on purpose, end to end on the local backend: SIGTERM reaches the driver while
its one cell's agent works; the cell's real `a2rl run` closes as `stopped` (no failure, in no
table or baseline count, no `harness-failed` in any state or report row), and rerunning the same
sweep resumes the cell, which then finishes."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from test_sweep import ARITH, BASE_COPY, small_matrix

from a2rl.sweep import load_cells, parse_matrix, run_sweep
from a2rl.sweep._sweep import SweepTerminated

pytestmark = pytest.mark.slow  # real runs: the stopped one and its resume


def _seed_baseline(matrix: Any, sweep_dir: Path) -> None:
    """The group's baseline as the sweep's baseline job leaves it (its marker and the shared
    cache entry), with a score of 0 instead of an evaluation: this test is about stopping
    and resuming cells, and a real baseline costs the most time of all on a loaded CPU."""
    from a2rl._util import utcnow
    from a2rl.grader._secret import public_fingerprint
    from a2rl.models import resolve_model
    from a2rl.schema._grader import BaselineRecord
    from a2rl.sweep import create_study, expand
    from a2rl.sweep._cell import Job, _baseline_file, _joined
    from a2rl.sweep._study import write_study
    from a2rl.tasks import get_task

    sweep_dir.mkdir()
    write_study(sweep_dir / "study.json", create_study(str(matrix.study or matrix.name), {})[0])
    (spec,) = expand(matrix, str(matrix.study or matrix.name))
    config = _joined(Job(kind="baseline", sweep_dir=str(sweep_dir), key=spec.baseline_group(),
                         attempt=1, run_id="", spec=spec))
    _, key = _baseline_file(config)
    record = BaselineRecord(score=0.0, n_items=6, metrics={}, evaluator_version="seeded",
                            model_hash=resolve_model(config.model).content_hash,
                            task_fingerprint=public_fingerprint(get_task(config.task,
                                                                         config.task_params)),
                            eval_seconds=0.0, computed_at=utcnow())
    shared = sweep_dir / "baselines"
    shared.mkdir()
    (shared / f"{key}.json").write_text(record.model_dump_json())
    (shared / f"{spec.baseline_group()}.json").write_text(json.dumps({"key": key}))


def test_a_stopped_sweep_records_stopped_runs_and_its_resume_finishes_them(
        tmp_path: Path, tiny_model: Path) -> None:
    from a2rl.results import aggregate, baselines, load_runs, marks, run_row

    working = tmp_path / "agent-working"
    # first attempt: says it works, then waits to be stopped; the resumed one submits
    agent = (f"cmd:if [ -e '{working}' ]; then {BASE_COPY[4:]}; "
             f"else touch '{working}'; sleep 600; fi")
    matrix = parse_matrix(small_matrix(tiny_model, "local", agent=agent, tasks=[ARITH],
                                       reference=False, repeats=1, max_attempts=1))
    sweep_dir = tmp_path / "sweep"
    _seed_baseline(matrix, sweep_dir)

    def stop_once_the_agent_works() -> None:
        while not working.exists():
            time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=stop_once_the_agent_works, daemon=True).start()
    with pytest.raises(SweepTerminated):
        run_sweep(matrix, sweep_dir)
    (cell,) = load_cells(sweep_dir)
    assert cell.status == "pending" and [(a.outcome, a.reason) for a in cell.attempts] == [
        ("stopped", "the sweep was stopped")]
    first = json.loads((sweep_dir / "runs" / "arith" / cell.attempts[0].run_id / "run.json")
                       .read_text())
    assert (first["status"], first["exit_reason"]) == ("stopped", "stopped")
    assert first["ended_at"] is not None and first["error"] is None

    # rerun: the stopped attempt does not use up max_attempts (1); the cell finishes
    summary = run_sweep(matrix, sweep_dir)
    assert (summary.finished, summary.failed, summary.retried) == (1, 0, 0)
    (cell,) = load_cells(sweep_dir)
    assert cell.status == "finished" and [a.outcome for a in cell.attempts] == [
        "stopped", "finished"]
    assert cell.result is not None and cell.result.submissions == 1

    # nowhere a harness failure; the stopped run is in no cell and no baseline count
    assert "harness_failed" not in (sweep_dir / "cells" / cell.id / "cell.json").read_text()
    runs, bad = load_runs([sweep_dir / "runs"])
    assert not bad and len(runs) == 2
    rows = [run_row(r) for r in runs]
    assert sorted(r["status"] for r in rows) == ["finished", "stopped"]
    assert not any("harness-failed" in marks(r) for r in rows)
    (leaderboard_cell,) = aggregate(rows)
    assert len(leaderboard_cell.runs) == 1
    assert leaderboard_cell.mark_text() == "unsandboxed×1"  # the test's --sandbox none
    assert [s.n for s in baselines(rows).values()] == [1]
