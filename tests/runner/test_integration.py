"""The whole loop on a real (tiny) model: workspace → sandboxed agent → grader → ledger → run.json.
Evaluation runs for real in a child process."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest

from a2rl.runner import run
from a2rl.schema import RunConfig, RunRecord
from conftest import TINY_TASK

AGENTS = Path(__file__).parent.parent / "fixtures" / "agents"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")


def script_agent(name: str, *args: str) -> str:
    """A cmd: agent that materialises a test script into code/ and runs it."""
    blob = base64.b64encode((AGENTS / name).read_bytes()).decode()
    quoted = " ".join(f"'{a}'" for a in args)
    return f"cmd:mkdir -p code && echo {blob} | base64 -d > code/{name} && python code/{name} {quoted}"


def config(tmp_path: Path, model: Path, agent: str, **kw) -> RunConfig:
    base = dict(task="arith", task_params=dict(TINY_TASK), agent=agent, model=str(model),
                mode="free", budget_s=1800, sandbox="bwrap", eval_timeout_s=1800, grace_s=2,
                port=0, runs_dir=str(tmp_path / "runs"))
    base.update(kw)
    return RunConfig(**base)


def run_dir_of(rec: RunRecord, tmp_path: Path) -> Path:
    return tmp_path / "runs" / rec.config.task / rec.run_id


@needs_bwrap
def test_full_loop_with_real_evaluation(tmp_path: Path, tiny_model: Path) -> None:
    rec = run(config(tmp_path, tiny_model, script_agent("honest.py")))
    rd = run_dir_of(rec, tmp_path)
    assert rec.status == "finished" and rec.exit_reason == "agent_exited"
    assert rec.agent_exit_code == 0 and rec.sandboxed
    assert rec.baseline is not None and rec.baseline.n_items == TINY_TASK["n_heldout"]
    statuses = [(s.model_path, s.status, s.cached) for s in rec.submissions]
    assert statuses == [("output/v1", "scored", False), ("output/v1-again", "scored", True),
                        ("output/base-copy", "baseline_copy", False)]
    assert rec.submissions[2].score == rec.baseline.score
    assert all(s.artifact_hash for s in rec.submissions)
    assert rec.model is not None and rec.submissions[2].artifact_hash == rec.model.content_hash
    # records outside the workspace
    on_disk = RunRecord.model_validate_json((rd / "run.json").read_text())
    assert on_disk.best == rec.best and len(on_disk.submissions) == 3
    details = (rd / "evals" / "s0001" / "details.jsonl").read_text().splitlines()
    assert len(details) == TINY_TASK["n_heldout"]
    assert "SUBMIT output/v1" in (rd / "agent" / "transcript.log").read_text()
    assert (rd / "baseline.json").exists() and (rd / "grader.log").exists()
    # and nothing held out inside it
    ws = rd / "workspace"
    held = [json.loads(line)["answer"] for line in details]
    prompts = [json.loads(line)["prompt"] for line in details]
    text = "".join(p.read_text(errors="ignore") for p in ws.rglob("*")
                   if p.is_file() and p.suffix != ".safetensors" and "model" not in p.parts)
    assert not any(p.split("<|im_start|>user\n")[-1].split("\n")[0] in text for p in prompts)
    assert held  # (answers are short numbers; the prompts are the identifying part)
    assert (ws / "code" / "honest.py").exists()
    # the harness recorded the code at each submission and indexed the models
    from a2rl.capture import read_artifacts, read_snapshots, snapshot_files

    snaps = read_snapshots(rd)
    assert [s.tag for s in snaps][:3] == ["s0001", "s0002", "s0003"] and snaps[-1].tag == "final"
    files = snapshot_files(rd, snaps[0].commit)
    assert "code/honest.py" in files and "SUBMIT" in files["code/honest.py"]
    large = json.loads(files["LARGE_FILES.json"])
    assert {"output/v1/model.safetensors", "output/v1/tokenizer.json"} <= {f["path"] for f in large}
    assert not any(name.startswith(("model/", "data/")) for name in files)
    arts = {a.path: a for a in read_artifacts(rd)}
    assert set(arts) >= {"output/v1", "output/v1-again", "output/base-copy"}
    assert arts["output/base-copy"].weights_hash == rec.model.content_hash
    assert arts["output/v1"].weights_hash == rec.submissions[0].artifact_hash


@needs_bwrap
def test_adversarial_agent_gets_nothing(tmp_path: Path, tiny_model: Path, a2rl_home: Path) -> None:
    # The run id is fixed so the adversary can aim at the real run directory.
    # Runs normally live outside /tmp (./runs); /tmp is the sandbox's private tmpfs, where
    # the adversary's writes would land harmlessly but look like successes. /var/tmp is outside
    # /tmp wherever the checkout (and pytest's tmp_path) lives.
    import uuid

    from a2rl.runner._run import run as run_fn

    outside_tmp = Path("/var/tmp") / f"a2rl-test-{uuid.uuid4().hex[:8]}"
    run_id = "adversary-run"
    rd = outside_tmp / "runs" / "arith" / run_id
    agent = script_agent("adversary.py", str(rd), str(a2rl_home))
    base_config = (tiny_model / "config.json").read_bytes()
    rec = run_fn(config(outside_tmp, tiny_model, agent), run_id=run_id)
    lines = [json.loads(line) for line in (rd / "agent" / "transcript.log").read_text()
             .splitlines() if line.startswith('{"attempt"')]
    assert len(lines) >= 25, lines
    leaked = [line for line in lines if line["outcome"] != "blocked"]
    assert not leaked, leaked
    # the ledger holds only the rejected attempts: no score, no forged line
    assert rec.submissions and all(s.status == "rejected" and s.score is None
                                   for s in rec.submissions)
    assert rec.best is None
    history = (rd / "ledger.jsonl").read_text()
    assert "forged" not in history and '"score": 100' not in history
    assert not (rd / "scores.json").exists()
    # the base model it tried to overwrite is the folder mounted at model/: intact
    assert (tiny_model / "config.json").read_bytes() == base_config
    from a2rl.workspace import remove_workspace_tree

    remove_workspace_tree(outside_tmp)


@needs_bwrap
def test_budget_is_enforced(tmp_path: Path, tiny_model: Path) -> None:
    rec = run(config(tmp_path, tiny_model, "cmd:trap '' TERM; sleep 600", budget_s=3,
                     grace_s=1))
    assert rec.exit_reason == "budget_exhausted"
    assert rec.timings.agent_s < 15
    assert rec.status == "finished"


@needs_bwrap
def test_budget_end_gives_the_agent_its_grace_period(tmp_path: Path, tiny_model: Path) -> None:
    """SIGTERM reaches the sandboxed agent, which may save its work before SIGKILL."""
    agent = ("cmd:trap 'echo saved > output/last-words; exit 0' TERM; "
             "while true; do sleep 0.1; done")
    # A budget long enough for the sandbox (bwrap, the network bridge) to start and the agent
    # to set its trap on a loaded machine; the SIGTERM must come after that to be catchable.
    rec = run(config(tmp_path, tiny_model, agent, budget_s=20, grace_s=5))
    assert rec.exit_reason == "budget_exhausted"
    ws = run_dir_of(rec, tmp_path) / "workspace"
    assert (ws / "output" / "last-words").read_text() == "saved\n"


def test_no_sandbox_is_recorded(tmp_path: Path, tiny_model: Path) -> None:
    rec = run(config(tmp_path, tiny_model, "cmd:./timer.sh", sandbox="none"))
    assert rec.sandboxed is False and rec.config.sandbox == "none"
    assert rec.agent_exit_code == 0
    assert "Remaining:" in (run_dir_of(rec, tmp_path) / "agent" / "transcript.log").read_text()


@needs_bwrap
def test_baseline_is_cached_and_not_charged(tmp_path: Path, tiny_model: Path) -> None:
    first = run(config(tmp_path, tiny_model, "cmd:true"))
    second = run(config(tmp_path, tiny_model, "cmd:true"))
    assert first.baseline and second.baseline
    assert not first.baseline.cached and second.baseline.cached
    assert second.baseline.score == first.baseline.score
    # the agent's clock started after the baseline
    assert first.timings.agent_s < first.timings.baseline_s + first.timings.agent_s


@needs_bwrap
def test_hidden_final_run_reports_dev_feedback_and_the_test_score_apart(tmp_path: Path,
                                                                        tiny_model: Path) -> None:
    """--final hidden through the whole harness: the agent is told, its feedback is on the dev
    split, one final evaluation on the test split is the headline in run.json, the console and
    summary.md, and the test-split record is not an iteration of the agent's."""
    from rich.console import Console

    from a2rl.analysis import analyze_run
    from a2rl.cli._show import show_run

    # a seed of many digits, so that no hash or timing in run.json holds it by chance
    task = dict(TINY_TASK, n_heldout=12, heldout_seed=739164528)
    rec = run(config(tmp_path, tiny_model, script_agent("honest.py"), task_params=task,
                     final="hidden", test_fraction=0.5))
    rd = run_dir_of(rec, tmp_path)
    assert rec.status == "finished"
    instructions = (rd / "workspace" / "instructions.md").read_text()
    assert "Hidden final evaluation" in instructions and "/final" in instructions
    assert rec.baseline is not None and rec.baseline.split == "dev"
    assert rec.baseline.test_score is not None
    assert rec.baseline.n_items + (rec.baseline.test_n_items or 0) == 12
    dev = [s for s in rec.submissions if s.split != "test"]
    test = [s for s in rec.submissions if s.split == "test"]
    assert [s.model_path for s in dev] == ["output/v1", "output/v1-again", "output/base-copy"]
    assert len(test) == 1 and test[0].final_of == rec.best.submission_id  # type: ignore[union-attr]
    final = rec.final
    assert final is not None and final.status == "scored" and final.chosen_by == "best_dev"
    assert final.score == test[0].score and final.test_baseline == rec.baseline.test_score
    on_disk = RunRecord.model_validate_json((rd / "run.json").read_text())
    assert on_disk.final == final and on_disk.config.final == "hidden"
    console = Console(record=True, width=200)
    show_run(on_disk, console)
    shown = console.export_text()
    assert "FINAL (hidden test)" in shown and "on the dev split" in shown
    assert on_disk.task is not None and on_disk.task.scorer and "scorer" in shown
    analysis = analyze_run(rd)
    assert analysis.final == final and analysis.metrics.submissions == 3
    assert "hidden final" in (rd / "summary.md").read_text()
    # the seed the user passed is in no record of the run
    assert "739164528" not in (rd / "run.json").read_text()
