"""ATIF both ways: `a2rl export atif|harbor` writes a run as Harbor's Agent Trajectory
Interchange Format, and `a2rl import harbor` brings Harbor trials (ATIF trajectory, verifier
reward, task) into a2rl's analysis and report. The Harbor job under
tests/fixtures/imports/harbor/ is written in Harbor's layout and ATIF's shapes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from a2rl._errors import A2RLError
from a2rl.cli import app
from a2rl.importers import harbor, posttrainbench
from a2rl.importers.atif import Trajectory, cap, trajectory_of_run
from a2rl.schema import OUTPUT_CAP, AgentEvent, current_submissions, load_run, read_jsonl

HERE = Path(__file__).parent.parent / "fixtures" / "imports"
JOB = HERE / "harbor" / "2026-11-20__14-02-11"
TRIAL = JOB / "gsm8k__Xk3pQ7a"
PTB = HERE / "posttrainbench" / "claude_claude-opus-4-6_10h" / "gsm8k_Qwen_Qwen3-1.7B-Base_40123"


def _events(run_dir: Path) -> list[AgentEvent]:
    return read_jsonl(run_dir / "agent" / "events.jsonl", AgentEvent)


def _calls(run_dir: Path) -> list[tuple[object, ...]]:
    """What a round trip must keep: prompts, turns, each tool call with its command or file,
    its output, exit code, error flag and time."""
    return [(e.kind, e.turn, round(e.t_s, 3), e.name if e.kind == "tool_call" else None,
             e.command, e.path, e.output, e.output_chars, e.exit_code, e.is_error,
             e.text if e.kind == "prompt" else None)
            for e in _events(run_dir) if e.kind in ("prompt", "turn", "tool_call", "command",
                                                     "file_edit")]


def _tokens(run_dir: Path) -> tuple[int, int, float]:
    usage = [e for e in _events(run_dir) if e.kind == "usage"]
    return (sum(e.input_tokens or 0 for e in usage), sum(e.output_tokens or 0 for e in usage),
            round(sum(e.cost_usd or 0.0 for e in usage), 6))


@pytest.fixture
def ptb_run(tmp_path: Path) -> Path:
    """A run imported from the PostTrainBench fixture: Claude Code events as a2rl's own
    parser writes them (prompt, turns, tool calls with outputs, usage)."""
    return posttrainbench.import_run(PTB, tmp_path / "runs", baseline=58.0)


def test_an_exported_run_validates_against_the_atif_model(ptb_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "trajectory.json"
    result = CliRunner().invoke(app, ["export", "atif", str(ptb_run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    traj = Trajectory.model_validate_json(out.read_text())
    assert traj.schema_version == "ATIF-v1.4" and traj.session_id == ptb_run.name
    assert [s.step_id for s in traj.steps] == list(range(1, len(traj.steps) + 1))
    first = traj.steps[0]
    assert first.source == "user" and first.message.startswith("Post-train Qwen/Qwen3-1.7B-Base")
    events = _events(ptb_run)
    calls = [c for s in traj.steps for c in s.tool_calls or []]
    assert len(calls) == sum(e.kind == "tool_call" for e in events) > 5
    outputs = {r.source_call_id: r.content for s in traj.steps if s.observation
               for r in s.observation.results}
    assert all(c.tool_call_id in outputs for c in calls)  # every call's output is there
    bash = [c for c in calls if c.function_name == "Bash"]
    assert bash and all(isinstance(c.arguments.get("command"), str) for c in bash)
    # token use per step adds up to the events' totals and to final_metrics
    tokens_in, tokens_out, _ = _tokens(ptb_run)
    steps_in = sum(s.metrics.prompt_tokens or 0 for s in traj.steps if s.metrics)
    assert traj.final_metrics is not None
    assert steps_in == traj.final_metrics.total_prompt_tokens == tokens_in > 0
    assert traj.final_metrics.total_completion_tokens == tokens_out
    assert traj.final_metrics.total_steps == len(traj.steps)
    # the submissions are the rewards
    assert traj.final_metrics.extra == {"reward": 64.82, "baseline": 58.0, "improvement": 6.82}
    [sub] = traj.extra["a2rl"]["submissions"]  # type: ignore[index]
    assert (sub["id"], sub["score"], sub["status"]) == ("s0001", 64.82, "scored")
    # standard output when no file is named
    shown = CliRunner().invoke(app, ["export", "atif", str(ptb_run)])
    assert shown.exit_code == 0 and Trajectory.model_validate_json(shown.stdout).steps == traj.steps


def test_an_exported_run_round_trips_through_import_harbor(ptb_run: Path, tmp_path: Path) -> None:
    job = tmp_path / "job"
    runner = CliRunner()
    out = runner.invoke(app, ["export", "harbor", str(ptb_run), "-o", str(job)])
    assert out.exit_code == 0, out.output
    [trial] = harbor.find_trials(job)
    result = json.loads((trial / "result.json").read_text())
    assert result["verifier_result"]["rewards"]["reward"] == pytest.approx(0.6482)
    back = runner.invoke(app, ["import", "harbor", str(job), "--runs-dir", str(tmp_path / "back"),
                               "--no-analyze"])
    assert back.exit_code == 0, back.output
    [again] = [p.parent for p in (tmp_path / "back").glob("*/*/run.json")]
    assert _calls(again) == _calls(ptb_run)
    assert _tokens(again) == _tokens(ptb_run)
    [sub] = current_submissions(again / "ledger.jsonl")
    assert (sub.id, sub.score, sub.baseline, sub.improvement) == ("s0001", 64.82, 58.0, 6.82)
    record = load_run(again)
    assert record.imported is not None and record.imported.harness == "harbor"
    assert record.best is not None and record.best.score == 64.82


def test_every_kind_of_event_round_trips(tmp_path: Path) -> None:
    """Calls without a call event (a `cmd:` agent's commands), file edits, failed calls, an
    output over the cap, a model error and a re-prompt keep their place and values."""
    run_dir = harbor.import_run(TRIAL, tmp_path / "runs")
    long = "x" * (OUTPUT_CAP + 5000)
    capped, chars = cap(long)
    assert len(capped) == OUTPUT_CAP and chars == len(long)
    events = [
        AgentEvent(kind="prompt", turn=0, t_s=0.0, text="Train the model."),
        AgentEvent(kind="turn", turn=0, t_s=1.0, extra={"model": "m-1"}),
        AgentEvent(kind="usage", turn=0, t_s=1.0, input_tokens=100, output_tokens=7, cost_usd=0.01),
        AgentEvent(kind="message", turn=0, t_s=1.0, text="Looking around."),
        AgentEvent(kind="tool_call", turn=0, t_s=1.5, name="Bash", output="a\nb", is_error=False),
        AgentEvent(kind="command", turn=0, t_s=1.5, command="ls", exit_code=0, end_s=2.0,
                   is_error=False),
        AgentEvent(kind="tool_call", turn=0, t_s=2.0, name="Write", output="written"),
        AgentEvent(kind="file_edit", turn=0, t_s=2.0, name="Write", path="train.py"),
        AgentEvent(kind="turn", turn=1, t_s=3.0),
        AgentEvent(kind="tool_call", turn=1, t_s=3.5, name="Bash", output=capped,
                   output_chars=chars, is_error=True),
        AgentEvent(kind="command", turn=1, t_s=3.5, command="python train.py", exit_code=1,
                   end_s=90.0, is_error=True),
        AgentEvent(kind="message", turn=1, t_s=91.0, text="API overloaded", extra={"error": "1"}),
        AgentEvent(kind="prompt", turn=2, t_s=95.0, text="Keep going."),
        AgentEvent(kind="command", turn=2, t_s=96.0, command="python train.py --lr 1e-5",
                   exit_code=0, end_s=400.0),
    ]
    (run_dir / "agent" / "events.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
    job = tmp_path / "job"
    harbor.write_trial(run_dir, job)
    again = harbor.import_run(harbor.find_trials(job)[0], tmp_path / "back")
    before, after = _calls(run_dir), _calls(again)
    assert after[:-3] == before[:-1]
    # a command without a model turn or call event (how a `cmd:` agent's commands look) comes
    # back as a turn holding one `shell` call: ATIF has no step for it otherwise
    assert [a[:4] for a in after[-3:]] == [("turn", 2, 96.0, None), ("tool_call", 2, 96.0, "shell"),
                                          ("command", 2, 96.0, None)]
    assert after[-1] == before[-1]
    assert _tokens(again) == (100, 7, 0.01)
    errors = [e.text for e in _events(again) if e.kind == "message" and e.extra.get("error") == "1"]
    assert errors == ["API overloaded"]
    # the standalone command became a call of its own, answered by nothing
    traj = trajectory_of_run(run_dir)
    last = traj.steps[-1]
    assert last.tool_calls is not None and last.tool_calls[0].function_name == "shell"
    assert last.tool_calls[0].arguments == {"command": "python train.py --lr 1e-5"}


def test_an_imported_harbor_job_gets_routes_phases_audit_and_a_report(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    result = CliRunner().invoke(app, ["import", "harbor", str(JOB), "--runs-dir", str(runs)],
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "route SFT+RL" in result.output
    trained = runs / "gsm8k" / f"harbor-{JOB.name}-{TRIAL.name}"
    record = load_run(trained)
    assert record.imported is not None and record.imported.agent_format == "atif (ATIF-v1.2)"
    assert record.config.driver == "claude-sonnet-4-5-20250929" and record.config.budget_s == 14400
    assert record.best is not None and record.best.score == 68.31
    assert record.timings.agent_s == 3 * 3600 + 39 * 60 + 30
    # the scripts the agent wrote (a write tool, a heredoc) are its workspace
    assert {p.name for p in (trained / "workspace").iterdir()} == {
        "gen_data.py", "train_sft.py", "train_grpo.py"}
    analysis = json.loads((trained / "analysis.json").read_text())
    assert analysis["route"] == "SFT+RL" and analysis["imported_from"] == "harbor"
    assert [(e["script"], e["method"], e["stage"]) for e in analysis["experiments"]] == [
        ("train_sft.py", "SFT", "from base"), ("train_grpo.py", "GRPO", "from checkpoint")]
    phases = analysis["turn_phase_seconds"]
    assert phases["SFT"] > 3600 and phases["RL"] > 3600  # the training commands' spans
    assert any(f["kind"] == "other-model" and "Qwen/Qwen2.5-7B-Instruct" in " ".join(f["evidence"])
               for f in analysis["findings"])
    timed_out = load_run(runs / "gsm8k" / f"harbor-{JOB.name}-gsm8k__M9vR2cd")
    assert timed_out.exit_reason == "budget_exhausted" and timed_out.best is not None
    assert timed_out.best.score == 0.0
    assert timed_out.imported is not None
    assert timed_out.imported.harness_notes["exception_type"] == "AgentTimeoutError"

    site = tmp_path / "site"
    built = CliRunner().invoke(app, ["report", str(runs), "-o", str(site)])
    assert built.exit_code == 0, built.output
    page = site / "runs" / f"{trained.name}.html"
    assert page.is_file() and "SFT+RL" in page.read_text()
    # the trajectory viewer carries the tool outputs of the Harbor trial
    viewer = site / "runs" / trained.name
    assert any("kept 5930 of 7473" in p.read_text(errors="replace")
               for p in viewer.rglob("*") if p.is_file())


# ---- hostile trial folders -----------------------------------------------------------------

def _copy(tmp_path: Path) -> Path:
    trial = tmp_path / "job" / TRIAL.name
    shutil.copytree(TRIAL, trial)
    return trial


def _refused(trial: Path, runs: Path, message: str) -> None:
    with pytest.raises(A2RLError) as info:
        harbor.import_run(trial, runs)
    assert message in info.value.message, info.value.message
    assert info.value.fix
    assert not list(runs.glob("*/*")), "a refused import left a run folder"


def test_a_linked_or_special_trajectory_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    secret = tmp_path / "home" / ".codex" / "auth.json"
    secret.parent.mkdir(parents=True)
    secret.write_text(json.dumps({"auth": "codex-token-b84d02f6a"}))
    trial = _copy(tmp_path)
    runs = tmp_path / "runs"
    traj = trial / "agent" / "trajectory.json"
    traj.unlink()
    traj.symlink_to(secret)
    _refused(trial, runs, "symbolic link")
    # the agent folder itself a link to a real trajectory elsewhere
    traj.unlink()
    (trial / "agent").rmdir()
    (trial / "agent").symlink_to(TRIAL / "agent")
    _refused(trial, runs, "symbolic link")
    (trial / "agent").unlink()
    (trial / "agent").mkdir()
    with traj.open("wb") as fh:  # sparse: 10 GB on paper
        fh.truncate(10 << 30)
    _refused(trial, runs, "over the")
    traj.unlink()
    _refused(trial, runs, "it is missing")


def test_artifacts_are_copied_without_following_links(tmp_path: Path) -> None:
    secret = tmp_path / "home" / ".docker" / "config.json"
    secret.parent.mkdir(parents=True)
    secret.write_text(json.dumps({"auth": "docker-auth-7f3a91c2e"}))
    trial = _copy(tmp_path)
    artifacts = trial / "artifacts"
    artifacts.mkdir()
    (artifacts / "eval_notes.md").write_text("final accuracy on dev: 0.70\n")
    (artifacts / "creds.json").symlink_to(secret)
    (artifacts / "home").symlink_to(secret.parent.parent)
    run_dir = harbor.import_run(trial, tmp_path / "runs")
    assert (run_dir / "workspace" / "eval_notes.md").read_text().startswith("final accuracy")
    for path in run_dir.rglob("*"):
        assert not path.is_symlink(), path
        if path.is_file():
            assert b"docker-auth-7f3a91c2e" not in path.read_bytes(), path
    refused = load_run(run_dir).imported.refused  # type: ignore[union-attr]
    assert any(r.startswith("artifacts/creds.json: a symbolic link") for r in refused), refused
    assert any(r.startswith("artifacts/home: a symbolic link") for r in refused), refused


def test_a_fifo_trajectory_does_not_block_the_import(tmp_path: Path) -> None:
    trial = _copy(tmp_path)
    traj = trial / "agent" / "trajectory.json"
    traj.unlink()
    os.mkfifo(traj)
    runs = tmp_path / "runs"
    done = subprocess.run([sys.executable, "-m", "a2rl.cli", "import", "harbor", str(trial),
                           "--runs-dir", str(runs), "--no-analyze"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "FIFO" in done.stderr, done.stderr
    assert not list(runs.glob("*/*"))


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "is not a valid ATIF trajectory"),
    ('{"schema_version": "ATIF-v1.2", "session_id": "s", "agent": {"name": "a", "version": "1"},'
     ' "steps": [{"step_id": 2, "source": "user", "message": "hi"}]}', "step ids must run 1, 2, 3"),
    ('{"schema_version": "ATIF-v1.2", "session_id": "s", "agent": {"name": "a", "version": "1"},'
     ' "steps": [{"step_id": 1, "source": "agent", "message": "", "observation": {"results": '
     '[{"source_call_id": "ghost", "content": "x"}]}}]}', "not among the step's tool_calls"),
    ('{"schema_version": "v9", "session_id": "s", "agent": {"name": "a", "version": "1"}, '
     '"steps": []}', "no ATIF version"),
    ('{"schema_version": "ATIF-v1.2", "session_id": "s", "agent": {"name": "a", "version": "1"},'
     ' "steps": [{"step_id": 1, "source": "user", "message": "hi", "timestamp": "yesterday"}]}',
     "steps.0.timestamp"),
    ('[1, 2, 3]', "is not a valid ATIF trajectory"),
])
def test_malformed_trajectories_are_named(tmp_path: Path, content: str, message: str) -> None:
    trial = _copy(tmp_path)
    (trial / "agent" / "trajectory.json").write_text(content)
    _refused(trial, tmp_path / "runs", message)


def test_a_result_that_is_no_object_is_refused(tmp_path: Path) -> None:
    trial = _copy(tmp_path)
    (trial / "result.json").write_text("[]")
    _refused(trial, tmp_path / "runs", "is not a JSON object")
    (trial / "result.json").write_text("{broken")
    _refused(trial, tmp_path / "runs", "is not JSON")


def test_paths_the_agent_named_stay_inside_the_workspace(tmp_path: Path) -> None:
    trial = _copy(tmp_path)
    path = trial / "agent" / "trajectory.json"
    traj = json.loads(path.read_text())
    writes = [("/etc/cron.d/evil.sh", "rm -rf ~"), ("../../escape.py", "x = 1"),
              ("/app/../../root/.bashrc.py", "x = 2"), ("/app/ok/../../../up.py", "x = 3"),
              ("/app/model/weights.bin", "binary"), ("/home/agent/notes.md", "kept")]
    heredoc = "cat > /app/../../../tmp/evil.py <<'EOF'\nimport os\nEOF"
    step = traj["steps"][-1]
    step["tool_calls"] = [{"tool_call_id": f"w{i}", "function_name": "Write",
                           "arguments": {"file_path": p, "content": c}}
                          for i, (p, c) in enumerate(writes)]
    step["tool_calls"].append({"tool_call_id": "h", "function_name": "Bash",
                               "arguments": {"command": heredoc}})
    path.write_text(json.dumps(traj))
    run_dir = harbor.import_run(trial, tmp_path / "runs")
    workspace = run_dir / "workspace"
    written = sorted(p.relative_to(workspace).as_posix() for p in workspace.rglob("*") if p.is_file())
    assert written == ["gen_data.py", "notes.md", "train_grpo.py", "train_sft.py"]
    assert not (tmp_path / "escape.py").exists() and not (tmp_path / "up.py").exists()
    notes = " ".join(load_run(run_dir).imported.reconstructed)  # type: ignore[union-attr]
    assert "/etc/cron.d/evil.sh" in notes and "model/weights.bin" in notes
    edits = {e.path for e in _events(run_dir) if e.kind == "file_edit"}
    assert "notes.md" in edits and "/etc/cron.d/evil.sh" in edits  # shown as named, not written


def test_a_failure_while_writing_leaves_no_half_written_run(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(harbor, "snapshot", broken)
    runs = tmp_path / "runs"
    with pytest.raises(OSError, match="No space left"):
        harbor.import_run(TRIAL, runs)
    assert not list(runs.glob("*/*"))


def test_one_damaged_trial_does_not_stop_the_rest_of_the_job(tmp_path: Path) -> None:
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    (job / "gsm8k__M9vR2cd" / "agent" / "trajectory.json").write_text("{}")
    runs = tmp_path / "runs"
    result = CliRunner().invoke(app, ["import", "harbor", str(job), "--runs-dir", str(runs),
                                      "--no-analyze"], terminal_width=200)
    assert isinstance(result.exception, A2RLError)  # `a2rl` prints it and exits 2
    assert "1 of 2 trial(s) not imported" in result.exception.message
    assert "not imported: " in result.output and "Field required" in result.output
    assert [p.name for p in runs.glob("*/*")] == [f"harbor-job-{TRIAL.name}"]


def test_a_folder_without_trials_is_named(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(app, ["import", "harbor", str(tmp_path / "empty"), "--runs-dir",
                                      str(tmp_path / "runs")])
    assert isinstance(result.exception, A2RLError)
    assert "trajectory.json cannot be read: it is missing" in result.exception.message
