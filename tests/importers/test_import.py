"""`a2rl import posttrainbench|rdagent` on fixtures in those harnesses' real layouts, then
`a2rl analyze` on the imported runs (tests/fixtures/imports/build_fixtures.py writes them)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from a2rl._errors import A2RLError
from a2rl.analysis import analyze_run
from a2rl.importers import posttrainbench, rdagent
from a2rl.importers._common import interpolate, strip_timestamps
from a2rl.schema import SubmissionRecord, current_submissions, load_run

HERE = Path(__file__).parent.parent / "fixtures" / "imports"
PTB = HERE / "posttrainbench" / "claude_claude-opus-4-6_10h" / "gsm8k_Qwen_Qwen3-1.7B-Base_40123"
RDA = HERE / "rdagent" / "workspace" / "gsm8k" / "20260301T090000_claude"
HAND_LABELS = json.loads((HERE / "posttrainbench" / "hand_labels.json").read_text())


def test_timestamp_prefix_is_stripped_and_kept() -> None:
    lines, times = strip_timestamps(['[2026-04-03T14:05:32Z] {"type": "x"}', "continued",
                                     "[2026-04-03T14:05:40.5+00:00] plain"])
    assert lines == ['{"type": "x"}', "continued", "plain"]
    assert times[1] is None and times[0] is not None and times[2] is not None
    assert (times[2] - times[0]).total_seconds() == 8.5


def test_interpolate_between_anchors() -> None:
    assert interpolate(5, [(0, 0.0), (4, 40.0)]) == [0.0, 10.0, 20.0, 30.0, 40.0]
    # an anchor that goes back in time is dropped; after the last anchor times stay flat
    assert interpolate(4, [(0, 0.0), (1, 10.0), (2, 5.0)]) == [0.0, 10.0, 10.0, 10.0]


def test_posttrainbench_run_imports_and_analyses(tmp_path: Path) -> None:
    run_dir = posttrainbench.import_run(PTB, tmp_path, baseline=58.0)
    run = load_run(run_dir)
    assert run.version == 1 and run.imported is not None
    assert run.imported.harness == "posttrainbench" and run.imported.agent_format == "claude-code"
    assert any("exec trace" in u for u in run.imported.unrecovered)
    assert run.config.agent == "claude" and run.config.budget_s == 36000
    assert run.timings.agent_s == 9 * 3600 + 58 * 60 + 20
    assert "contamination_judgement.txt" in run.imported.harness_notes
    [sub] = current_submissions(run_dir / "ledger.jsonl")
    assert (sub.score, sub.baseline, sub.improvement) == (64.82, 58.0, 6.82)
    transcript = (run_dir / "agent" / "transcript.log").read_text()
    assert "[2026-" not in transcript  # the harness's prefix is gone, its times are kept
    times = [float(t) for t in (run_dir / "agent" / "transcript.times").read_text().split()]
    assert times == sorted(times) and times[-1] == 35890.0
    assert (run_dir / "workspace" / "train_sft.py").exists()

    a = analyze_run(run_dir, heldout=[])
    assert a.version == 2 and a.imported_from == "posttrainbench"
    assert a.route == "SFT+RL" and a.metrics.best == 64.82 and a.metrics.baseline == 58.0
    # every training script the agent ran is an experiment, joined to its file
    assert [(e.script, e.strategy, e.method, e.stage) for e in a.experiments] == [
        ("train_sft.py", "PEFT", "SFT", "from base"),
        ("train_grpo.py", "RL", "GRPO", "from checkpoint")]
    assert a.experiments[0].duration_s == 16200.0 and a.strategy_changes == 1
    # training and waiting time within 10 % of the hand labelling
    for phase in ("SFT", "checkpoint/waiting", "evaluation"):
        got = a.turn_phase_seconds.get(phase, 0.0)
        assert abs(got - HAND_LABELS[phase]) <= 0.1 * HAND_LABELS[phase], (phase, got)
    assert (run_dir / "analysis.json").exists() and (run_dir / "summary.md").exists()
    # the scripts load the run's own base model by its hub id: not a foreign model
    assert not [f for f in a.findings if f.kind == "other-model"]


def test_posttrainbench_without_baseline_says_so(tmp_path: Path) -> None:
    run_dir = posttrainbench.import_run(PTB, tmp_path)
    [sub] = current_submissions(run_dir / "ledger.jsonl")
    assert math.isnan(sub.baseline) and sub.improvement is None
    line = (run_dir / "ledger.jsonl").read_text()
    assert SubmissionRecord.model_validate_json(line).score == 64.82  # NaN round-trips
    assert any("--baseline" in u for u in load_run(run_dir).imported.unrecovered)  # type: ignore[union-attr]
    a = analyze_run(run_dir, heldout=[])
    assert a.metrics.baseline is None and a.metrics.improvement is None


def test_import_refuses_a_second_time_without_force(tmp_path: Path) -> None:
    posttrainbench.import_run(PTB, tmp_path, baseline=58.0)
    with pytest.raises(A2RLError, match="already exists") as exc:
        posttrainbench.import_run(PTB, tmp_path, baseline=58.0)
    assert "--force" in (exc.value.fix or "")
    posttrainbench.import_run(PTB, tmp_path, baseline=58.0, force=True)


def test_bad_folders_are_named_with_a_fix(tmp_path: Path) -> None:
    with pytest.raises(A2RLError, match="not a PostTrainBench result folder"):
        posttrainbench.import_run(tmp_path, tmp_path / "runs")
    with pytest.raises(A2RLError, match="no scores.json"):
        rdagent.import_run(tmp_path, tmp_path / "runs")
    bad = tmp_path / "ws"
    bad.mkdir()
    (bad / "scores.json").write_text("{not json")
    with pytest.raises(A2RLError, match="not JSON"):
        rdagent.import_run(bad, tmp_path / "runs")


def test_rdagent_run_imports_and_analyses(tmp_path: Path) -> None:
    run_dir = rdagent.import_run(RDA, tmp_path)
    run = load_run(run_dir)
    assert run.imported is not None and run.imported.harness == "rdagent"
    assert run.config.agent == "claude" and run.config.budget_s == 10800
    subs = current_submissions(run_dir / "ledger.jsonl")
    # scores.json's naive local times (UTC+8) are placed on the run's clock via run_meta.json
    assert [(s.id, s.elapsed_s, s.score, s.baseline) for s in subs] == [
        ("s0001", 3900.0, 31.2, 21.61), ("s0002", 9280.0, 35.8, 21.61)]
    assert run.best is not None and run.best.submission_id == "s0002"
    assert any("UTC offset +8.00" in r for r in run.imported.reconstructed)
    assert (run_dir / "workspace" / "code" / "train_grpo.py").exists()
    assert not (run_dir / "workspace" / "output" / "v1" / "model.safetensors").exists()

    a = analyze_run(run_dir, heldout=[])
    assert a.route == "SFT+RL" and a.metrics.baseline == 21.61 and a.metrics.submissions == 2
    assert [(e.path, e.strategy, e.stage) for e in a.experiments] == [
        ("output/v1", "PEFT", "from base"), ("output/v2", "RL", "from checkpoint")]
    # the stream had no times: commands are placed between the submissions they precede
    assert a.experiments[0].elapsed_s < 3900 < a.experiments[1].elapsed_s < 9280
    assert any(f.kind == "unsandboxed" and f.severity == "warning" for f in a.findings)


@pytest.mark.parametrize("harness", ["posttrainbench", "rdagent"])
def test_cli_import_then_analyze(tmp_path: Path, harness: str) -> None:
    from typer.testing import CliRunner

    from a2rl.cli import app

    folder = PTB if harness == "posttrainbench" else RDA
    result = CliRunner().invoke(app, ["import", harness, str(folder), "--runs-dir", str(tmp_path)],
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "not recovered" in result.output and "route SFT+RL" in result.output
    [run_dir] = list(tmp_path.glob("gsm8k/*"))
    again = CliRunner().invoke(app, ["analyze", str(run_dir)], terminal_width=200)
    assert again.exit_code == 0, again.output


def test_cli_imports_every_run_under_a_results_folder(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from a2rl.cli import app

    root = HERE / "posttrainbench"  # <results>/<agent>_<config>_<N>h/<task>_<model>_<cluster>
    result = CliRunner().invoke(app, ["import", "posttrainbench", str(root), "--runs-dir",
                                      str(tmp_path), "--no-analyze"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert [p.name for p in tmp_path.glob("gsm8k/*")] == [
        "ptb-claude_claude-opus-4-6_10h-gsm8k_Qwen_Qwen3-1.7B-Base_40123"]
    assert not (next(tmp_path.glob("gsm8k/*")) / "analysis.json").exists()
