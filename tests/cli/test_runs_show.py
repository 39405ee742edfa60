"""`a2rl runs show` on every run kind (own, multi, imported without a baseline, failed during
set-up, still running) and `a2rl runs list` through a pipe: nothing crashes, every number whole."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "fixtures" / "results"))
from make_results import PTB_RUN, make_results  # noqa: E402

from a2rl.analysis import analyze_run  # noqa: E402
from a2rl.importers import posttrainbench  # noqa: E402
from a2rl.schema import load_run, write_json  # noqa: E402

SRC = Path(__file__).resolve().parent.parent.parent / "src"


def _a2rl(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = str(SRC)
    return subprocess.run([sys.executable, "-m", "a2rl.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("show")
    make_results(root, imported=False)
    runs_dir = root / "runs"
    # imported without a baseline: no improvement can be computed
    analyze_run(posttrainbench.import_run(PTB_RUN, runs_dir), heldout=[])
    # still running: no end time, no analysis
    own = sorted((runs_dir / "arith").iterdir())[0]
    running = runs_dir / "arith" / "20260301-230000-running"
    shutil.copytree(own, running)
    rec = load_run(running)
    write_json(running / "run.json", rec.model_copy(update={
        "run_id": running.name, "status": "running", "ended_at": None, "best": None,
        "improvement": None, "submissions": [], "timings": rec.timings.model_copy(
            update={"agent_s": 0.0}), "cost": None}))
    (running / "analysis.json").unlink()
    # a multi run: one id, a run per task, runs/multi/<id>/multi.json
    for task in ("arith", "gsm8k"):
        member = runs_dir / task / "20260301-235959-multi"
        shutil.copytree(own, member)
        write_json(member / "run.json", load_run(own).model_copy(update={
            "run_id": member.name, "created_at": dt.datetime(2026, 3, 1, 23, 59, tzinfo=dt.UTC)}))
    multi = runs_dir / "multi" / "20260301-235959-multi"
    multi.mkdir(parents=True)
    (multi / "multi.json").write_text('{"tasks": ["arith", "gsm8k"], "best": {}}')
    return runs_dir


def test_runs_show_every_kind(runs: Path) -> None:
    dirs = sorted(p.parent for p in runs.glob("*/*/run.json"))
    assert len(dirs) >= 6
    for run_dir in dirs:
        out = _a2rl("runs", "show", str(run_dir))
        assert out.returncode == 0, (run_dir, out.stderr)
        assert "Traceback" not in out.stderr and "None" not in out.stdout, (run_dir, out.stdout)
    imported = next(d for d in dirs if load_run(d).imported is not None)
    text = _a2rl("runs", "show", str(imported)).stdout
    assert "baseline" in text and "not recorded" in text and "route" in text
    own = _a2rl("runs", "show", str(sorted((runs / "arith").iterdir())[0])).stdout
    assert "summary.md" in own and "route" in own
    multi = _a2rl("runs", "show", "20260301-235959-multi", "--runs-dir", str(runs))
    assert multi.returncode == 0, multi.stderr
    assert multi.stdout.count("20260301-235959-multi") >= 2


def test_runs_list_through_a_pipe_prints_whole_numbers(runs: Path) -> None:
    out = _a2rl("runs", "list", "--runs-dir", str(runs))
    assert out.returncode == 0, out.stderr
    assert "…" not in out.stdout, out.stdout
    assert "20260301-235959-multi" in out.stdout


def test_runs_show_and_list_of_a_running_run_read_its_ledger(runs: Path) -> None:
    """run.json of a running run holds no submission yet; show and list take them, the best
    and the agent's time so far from the ledger and the start."""
    from a2rl.schema import current_submissions

    running = runs / "arith" / "20260301-230000-running"
    subs = current_submissions(running / "ledger.jsonl")
    best = max((s for s in subs if s.valid and s.score is not None), key=lambda s: s.score or 0)
    shown = _a2rl("runs", "show", str(running)).stdout
    assert "no valid submission" not in shown and f"{best.score:.2f} ({best.id})" in shown, shown
    assert all(s.id in shown for s in subs) and "so far" in shown and "agent ran 0 s" not in shown
    row = next(r for r in _a2rl("runs", "list", "--runs-dir", str(runs)).stdout.splitlines()
               if running.name in r)
    assert f"{best.score:.2f}" in row and f" {len(subs)} " in row, row


def test_runs_show_prints_the_cost(runs: Path, tmp_path: Path) -> None:
    from a2rl.schema import RunCost

    own = sorted((runs / "arith").iterdir())[0]
    priced = tmp_path / "priced"
    shutil.copytree(own, priced)
    write_json(priced / "run.json", load_run(own).model_copy(update={"cost": RunCost(
        input_tokens=12000, output_tokens=3400, usd=1.25, usd_source="[red]cli\x1b[2J",
        gpus=1, agent_gpu_hours=0.5, eval_gpu_hours=0.25)}))
    out = _a2rl("runs", "show", str(priced))
    assert out.returncode == 0, out.stderr
    line = next(r for r in out.stdout.splitlines() if r.startswith("cost"))
    assert "12,000 input + 3,400 output tokens" in line and "$1.25" in line
    assert "0.75 GPU-hours" in line and "[red]cli" in line and "\x1b" not in out.stdout
