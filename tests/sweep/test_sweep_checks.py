"""A sweep pays for no configuration error: the cells' agent checks run before anything starts
(a cell that would be refused stops the sweep, or with --skip-unready stays pending while the
others run), a cell whose run refuses its configuration (exit code 2) is never retried, runs
stopped on purpose count nowhere, and `sweep plan` prints the totals of the matrix (checked
against numbers computed here from each example's YAML)."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_sweep import ARITH, _fake_run, _ScriptedBackend, small_matrix
from typer.testing import CliRunner

from a2rl._errors import A2RLError
from a2rl.cli import app
from a2rl.sweep import expand, load_cells, parse_matrix, plan, plan_totals, run_sweep

EXAMPLES = Path(__file__).parent.parent.parent / "examples" / "sweeps"
KEYS = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN")


@pytest.fixture
def no_claude_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "agents").mkdir()
    monkeypatch.setenv("A2RL_AGENTS_DIR", str(tmp_path / "agents"))


def _finishing(job: Any) -> Any:
    from a2rl.sweep._cell import JobResult, run_dir_of

    if job.kind == "baseline":
        (Path(job.sweep_dir) / "baselines").mkdir(exist_ok=True)
        (Path(job.sweep_dir) / "baselines" / f"{job.key}.json").write_text('{"key": "k"}')
    else:
        _fake_run(run_dir_of(job))
    return JobResult(outcome="finished", host="h", exit_code=0)


def test_a_cell_lacking_its_key_starts_nothing_and_is_never_retried(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_claude_key: None) -> None:
    import a2rl.sweep._backends

    backend = _ScriptedBackend(_finishing)
    monkeypatch.setattr(a2rl.sweep._backends, "make_backend", lambda *a: backend)
    data = small_matrix(tmp_path, "local", tasks=[ARITH], repeats=1, max_attempts=3)
    data["agents"].append({"name": "cc", "agent": "claude-code"})
    matrix = parse_matrix(data)
    # `sweep plan` names the same problems
    planned = {p.spec.agent_label: p for p in plan(matrix, None)}
    assert [m for m in planned["cc"].missing if "ANTHROPIC_API_KEY" in m]
    assert not planned["reference"].missing and not planned["scripted"].missing
    # by default the sweep refuses before any job (baselines included)
    with pytest.raises(A2RLError) as err:
        run_sweep(matrix, tmp_path / "sw")
    assert "1 of 3 cell(s) to run would be refused" in err.value.message
    assert "ANTHROPIC_API_KEY" in err.value.message and "is not installed" in err.value.message
    assert "--skip-unready" in (err.value.fix or "") and "export ANTHROPIC_API_KEY" in (
        err.value.fix or "")
    assert backend.submitted == [] and load_cells(tmp_path / "sw") == []
    # --skip-unready: the others run; the unready cell starts no attempt, nothing is retried
    summary = run_sweep(matrix, tmp_path / "sw", skip_unready=True)
    assert (summary.finished, summary.unready, summary.retried, summary.failed) == (2, 1, 0, 0)
    cells = {c.spec.agent_label: c for c in load_cells(tmp_path / "sw")}
    cc = cells["cc"]
    assert cc.status == "pending" and cc.attempts == []
    assert cc.error and cc.error.startswith("not started here:") and "ANTHROPIC_API_KEY" in cc.error
    assert cc.id not in {j.key for j in backend.submitted}
    from rich.console import Console

    from a2rl.sweep import show_status

    console = Console(record=True, width=2000)  # no column wraps
    show_status(tmp_path / "sw", console)
    shown = console.export_text()
    assert "pending  │ 0     │" in shown  # no attempt
    assert "not started here: the claude-code CLI" in shown
    # with the key (and the CLI) the rerun starts it
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-1234")
    exe = tmp_path / "agents" / "claude-code-2.1.332" / "node_modules" / ".bin" / "claude"
    from a2rl.agents.claude_code import ClaudeCodeAgent

    assert ClaudeCodeAgent.package.version in str(exe)
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    again = run_sweep(matrix, tmp_path / "sw")
    assert (again.finished, again.unready, again.skipped) == (1, 0, 2)


def test_a_driver_for_an_agent_that_takes_none_is_refused_in_the_matrix(tmp_path: Path) -> None:
    data = small_matrix(tmp_path, "local", tasks=[ARITH], repeats=1)
    data["drivers"] = [{"driver": "gpt-5"}]  # meant for CLI agents; the reference takes none
    with pytest.raises(A2RLError, match="agent 'reference' runs on no driver LLM") as err:
        expand(parse_matrix(data), "s")
    assert "`drivers: [{}]`" in (err.value.fix or "")
    data["agents"] = [{**a, "drivers": [{}]} for a in data["agents"]]
    assert {c.driver for c in expand(parse_matrix(data), "s")} == {None}
    # a cmd: agent may reach an endpoint (--driver-base-url) without a driver model
    data["agents"][1]["drivers"] = [{"base_url": "http://127.0.0.1:9/v1"}]
    assert len(expand(parse_matrix(data), "s")) == 2


def test_a_configuration_error_of_a_cell_is_not_retried(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import a2rl.sweep._backends
    import a2rl.sweep._cell
    from a2rl.sweep._cell import Job, JobResult, execute_job

    # the cell's process exits with code 2 (an A2RLError): classified as refused
    spec = expand(parse_matrix(small_matrix(tmp_path, "local", tasks=[ARITH], repeats=1,
                                            reference=False)), "s")[0]
    monkeypatch.setattr(a2rl.sweep._cell, "child_command", lambda job_file: [
        sys.executable, "-c", "import sys; print('error: the model is gone\\n  fix: x', "
        "file=sys.stderr); sys.exit(2)"])
    result = execute_job(Job(kind="cell", sweep_dir=str(tmp_path / "x"), key=spec.id,
                             attempt=1, run_id="r", spec=spec))
    assert result.outcome == "refused" and "the model is gone" in (result.reason or "")

    def script(job: Any) -> Any:
        if job.kind == "baseline":
            return _finishing(job)
        return JobResult(outcome="refused", host="h", exit_code=2, reason="bad setup")

    backend = _ScriptedBackend(script)
    monkeypatch.setattr(a2rl.sweep._backends, "make_backend", lambda *a: backend)
    data = small_matrix(tmp_path, "local", tasks=[ARITH], repeats=1, reference=False,
                        max_attempts=3)
    summary = run_sweep(parse_matrix(data), tmp_path / "sw")
    assert (summary.failed, summary.retried) == (1, 0)
    (cell,) = load_cells(tmp_path / "sw")
    assert cell.status == "failed" and [a.outcome for a in cell.attempts] == ["refused"]
    assert cell.error == "configuration error (not retried): bad setup"
    assert [j.kind for j in backend.submitted] == ["baseline", "cell"]


def test_stopped_runs_count_nowhere() -> None:
    """A run stopped on purpose is in no cell, baseline or failure count (like a run that
    never ran); a failed one stays a marked, uncounted harness failure."""
    from a2rl.results import aggregate, baselines, marks

    def row(status: str, best: float, base: float) -> dict[str, Any]:
        return {"run_id": status + str(best), "stack": "s", "task": "t", "mode": "free",
                "model": "m", "status": status, "best": best, "baseline": base,
                "sandboxed": True}

    rows = [row("finished", 50.0, 30.0), row("stopped", 0.0, 30.0), row("stopped", 1.0, 99.0)]
    (cell,) = aggregate(rows, metrics=["best"])
    assert len(cell.runs) == 1 and cell.stats["best"].n == 1 and cell.mark_text() == ""
    assert baselines(rows)[("t", "m", "")].n == 1
    assert marks(rows[1]) == ["stopped"]
    (failed,) = aggregate([row("failed", 0.0, 30.0)], metrics=["best"])
    assert failed.mark_text() == "harness-failed×1" and failed.stats["best"].n == 0


# --- sweep plan: the totals ------------------------------------------------------------------


def _hours(text: str) -> float:
    value, unit = re.fullmatch(r"(\d+(?:\.\d+)?)([hms]?)", str(text)).groups()  # type: ignore[union-attr]
    return float(value) / {"h": 1, "m": 60, "s": 3600, "": 3600}[unit]


def _expected(data: dict[str, Any], gpus_here: int, price: float) -> dict[str, Any]:
    """The totals of an example matrix, from its YAML alone (every cell has the matrix's
    budget and resources in the examples: no per-entry overrides)."""
    stacks: dict[str, int] = {}
    top = [d if isinstance(d, dict) else {"driver": d} for d in data.get("drivers", [None])]
    for agent in data["agents"]:
        name = agent.get("name") or agent["agent"]
        for d in agent.get("drivers", top):
            label = name if not d or not d.get("driver") else \
                f"{name} · {d.get('name') or d['driver']}"
            for i, arm in enumerate(data.get("scaffolds", [None])):
                # an arm's label is its canonical component list: numbered here instead
                key = label if arm in (None, "none") else f"{label} + arm {i}"
                stacks[key] = stacks.get(key, 0) + (
                    len(data["tasks"]) * len(data.get("modes", ["free"])) * data["repeats"]
                    * len(data["models"]))
    cells = sum(stacks.values())
    res = data.get("resources", {})
    gpus = res.get("gpus", 0) + res.get("eval_gpus", 0)
    budget = _hours(data["budget"])
    parallel = data.get("max_parallel") or (1 if data["backend"] == "local" else cells)
    if data["backend"] == "local" and gpus:
        parallel = min(parallel, gpus_here // math.ceil(gpus))
    return {"cells": cells, "gpu_hours": cells * gpus * budget, "slots": parallel,
            "wall": math.ceil(cells / parallel) * budget if parallel else None,
            "stacks": {k: (n, n * gpus * budget * price) for k, n in stacks.items()}}


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_plan_totals_of_each_example(path: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from a2rl.sweep import load_matrix

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")  # this machine's GPUs, for local
    monkeypatch.chdir(tmp_path)  # no sweeps/<name> here: every cell is still to run
    data = yaml.safe_load(path.read_text())
    want = _expected(data, gpus_here=4, price=2.5)
    matrix = load_matrix(path)
    got = plan_totals(matrix, [c.spec for c in plan(matrix, None)], runs_dir=None,
                      gpu_hour_usd=2.5)
    assert got.cells == want["cells"] and got.slots == want["slots"]
    assert got.gpu_hours == pytest.approx(want["gpu_hours"])
    assert got.eval_gpu_hours == 0
    assert (got.wall_hours is None) == (want["wall"] is None)
    if want["wall"] is not None:
        assert got.wall_hours == pytest.approx(want["wall"])
    # stacks in matrix order (an arm's label is its canonical component list: compared by base)
    assert [(s.cells, pytest.approx(s.gpu_usd)) for s in got.stacks] == list(
        want["stacks"].values())
    assert [s.stack.partition(" + ")[0] for s in got.stacks] == [
        k.partition(" + ")[0] for k in want["stacks"]]
    assert all(s.llm_usd is None for s in got.stacks)  # no earlier runs
    out = CliRunner().invoke(app, ["sweep", "plan", str(path), "--gpu-hour-usd", "2.5"],
                             env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert f"totals for {want['cells']} cell(s) to run: {want['gpu_hours']:,.1f} GPU-hours" in text
    assert "no evaluation allowance" in text and "$2.50 per GPU-hour" in text
    if want["wall"] is not None:
        assert f"wall time: {want['wall']:,.1f} h at {want['slots']} cell(s) at once" in text
    total_usd = sum(usd for _, usd in want["stacks"].values())
    assert f"{total_usd:,.2f}" in text and "unknown: no earlier run of this stack" in text
    assert not (tmp_path / "sweeps").exists()  # planning writes nothing


def test_plan_totals_count_evaluation_gpus_and_price_llm_spend_from_earlier_runs(
        tmp_path: Path) -> None:
    import json

    from a2rl.sweep._cell import run_dir_of
    from a2rl.sweep._totals import stack_label

    data = small_matrix(tmp_path, "slurm", tasks=[ARITH], repeats=2, reference=False,
                        budget="2h", max_parallel=1)
    data["resources"] = {"gpus": 2, "eval_gpus": 1, "cpus": 1}
    matrix = parse_matrix(data)
    specs = expand(matrix, "s")
    runs = tmp_path / "sw" / "runs"
    # two earlier runs of this stack: $3 over 0.5 agent-hours and $1 over 0.5 (unreadable and
    # unpriced records are left out)
    from a2rl.sweep._cell import Job

    for i, (usd, agent_s) in enumerate([(3.0, 1800.0), (1.0, 1800.0), (None, 3600.0)]):
        job = Job(kind="cell", sweep_dir=str(tmp_path / "sw"), key="k", attempt=1,
                  run_id=f"r{i}", spec=specs[0])
        _fake_run(run_dir_of(job))
        path = run_dir_of(job) / "run.json"
        record = json.loads(path.read_text())
        record["config"]["agent"] = specs[0].agent
        record["timings"] = {"agent_s": agent_s}
        record["cost"] = {"usd": usd}
        path.write_text(json.dumps(record))
    (runs / "arith" / "broken").mkdir()
    (runs / "arith" / "broken" / "run.json").write_text("{not json")
    got = plan_totals(matrix, specs, runs_dir=runs, gpu_hour_usd=1.0)
    assert got.gpu_hours == pytest.approx(2 * 3 * 2) and got.eval_gpu_hours == pytest.approx(4)
    assert got.slots == 1 and got.wall_hours == pytest.approx(4)
    (stack,) = got.stacks
    assert stack.stack == stack_label(specs[0]) == "scripted"
    assert stack.rate is not None and stack.rate.runs == 2
    assert stack.llm_usd == pytest.approx(4.0 / 1.0 * 4)  # $4 per agent-hour × 4 agent-hours
