"""The sweep driver as a job of its own (`a2rl sweep --as-job`), through submitit's local
executor: the driver job runs the cells, is SIGKILLed while a cell is in flight (a lost node,
a job killed without notice), and a second driver job resumes: every cell ends finished once,
the cells finished before the kill are not run again."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
import yaml
from test_sweep import ARITH, small_matrix

from a2rl.sweep import load_cells
from a2rl.sweep._driver import submit_driver

pytest.importorskip("submitit")

pytestmark = pytest.mark.slow  # real runs of a scripted agent (seconds each) and a baseline

# Submits the base model, then sleeps a little: long enough for the test to see a cell in
# flight and kill the driver under it.
AGENT = ("cmd:cp -r \"$MODEL_PATH\" output/v1 && curl -s -X POST \"$A2RL_GRADER_URL/submit\" "
         "-H \"Authorization: Bearer $A2RL_TOKEN\" -H 'Content-Type: application/json' "
         "-d '{\"model_path\": \"output/v1\"}' && sleep 4")


def _driver_pid(sweep_dir: Path) -> int | None:
    try:
        text = (sweep_dir / ".lock").read_text()
    except OSError:
        return None
    return int(text.split()[1]) if text.startswith("pid ") else None


def test_the_driver_runs_as_a_job_and_a_rerun_resumes_after_it_is_killed(
        tmp_path: Path, tiny_model: Path) -> None:
    data = small_matrix(tiny_model, "local", agent=AGENT, tasks=[ARITH], repeats=3,
                        reference=False, max_parallel=1, slurm={"cluster": "local"})
    matrix_path = tmp_path / "m.yaml"
    matrix_path.write_text(yaml.safe_dump(data))
    sweep_dir = tmp_path / "sweep"
    job = submit_driver(matrix_path, sweep_dir)
    recorded = json.loads((sweep_dir / "driver.json").read_text())
    assert recorded["job_id"] == str(job.job_id) and recorded["cluster"] == "local"

    # Wait (an upper bound only: nothing below depends on how fast the machine is) until one
    # cell has finished and the next one runs, then kill the driver without notice.
    deadline = time.monotonic() + 900
    before: dict[str, list[str]] = {}
    while time.monotonic() < deadline and not job.done():
        cells = load_cells(sweep_dir) if (sweep_dir / "cells").exists() else []
        finished = [c for c in cells if c.status == "finished"]
        if finished and any(c.status == "running" for c in cells):
            before = {c.id: [a.run_id for a in c.attempts] for c in finished}
            break
        time.sleep(0.2)
    assert before, "no cell finished while the driver job ran"
    pid = _driver_pid(sweep_dir)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    while not job.done():
        time.sleep(0.2)
    assert any(c.status != "finished" for c in load_cells(sweep_dir))

    again = submit_driver(matrix_path, sweep_dir)
    summary = again.result()  # raises if the driver job failed
    assert summary["cells"] == 3 and summary["skipped"] >= len(before)
    cells = load_cells(sweep_dir)
    assert len(cells) == 3 and all(c.status == "finished" for c in cells), \
        [(c.id, c.status, c.error) for c in cells]
    for c in cells:
        assert [a.outcome for a in c.attempts].count("finished") == 1, c.attempts
        if c.id in before:  # finished before the kill: not run again
            assert [a.run_id for a in c.attempts] == before[c.id]
    assert json.loads((sweep_dir / "driver.json").read_text())["job_id"] == str(again.job_id)
