"""Per-run analysis on hand-made run directories with known answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from a2rl._util import utcnow
from a2rl.analysis import analyze_run, analyze_script, contamination, route_of
from a2rl.capture import ArtifactIndexer, CodeRecorder
from a2rl.schema import BaselineRecord, BestSoFar, ModelInfo, RunConfig, RunRecord, SubmissionRecord, TaskInfo

SFT = """
from trl import SFTConfig, SFTTrainer
cfg = SFTConfig(output_dir="o", learning_rate=2e-5, num_train_epochs=3, per_device_train_batch_size=4)
trainer = SFTTrainer(model=m, args=cfg, train_dataset=ds)
trainer.train()
"""
GRPO = """
from trl import GRPOConfig, GRPOTrainer
def reward_fn(completions, **kw):
    return [1.0 for _ in completions]
cfg = GRPOConfig(output_dir="o", learning_rate=1e-6, num_generations=8, beta=0.04)
GRPOTrainer(model="output/sft", reward_funcs=[reward_fn], args=cfg, train_dataset=ds).train()
"""
LORA_MANUAL = """
import torch
from peft import LoraConfig, get_peft_model
model = get_peft_model(base, LoraConfig(r=16, lora_alpha=32))
for batch in loader:
    loss = model(**batch).loss
    loss.backward()
    opt.step()
model = model.merge_and_unload()
"""
PLACEHOLDER = """
# TODO: GRPOTrainer goes here; "SFTTrainer" is only mentioned in this string
print("training would happen here")
"""


def test_routes_come_from_syntax_not_substrings() -> None:
    assert analyze_script("a.py", SFT).methods == {"SFT"}
    assert analyze_script("a.py", SFT).trains
    assert analyze_script("b.py", GRPO).methods == {"GRPO"}
    lora = analyze_script("c.py", LORA_MANUAL)
    assert lora.methods == {"PEFT", "merging", "SFT"} and lora.trains
    placeholder = analyze_script("d.py", PLACEHOLDER)
    assert placeholder.methods == set() and not placeholder.trains
    broken = analyze_script("e.py", "def (:")
    assert broken.parse_error and not broken.trains
    assert route_of({"SFT"}, trained=True, copy=False) == "SFT-only"
    assert route_of({"SFT", "GRPO"}, trained=True, copy=False) == "SFT+RL"
    assert route_of({"GRPO"}, trained=True, copy=False) == "GRPO"
    assert route_of({"PPO"}, trained=True, copy=False) == "PPO"
    assert route_of(set(), trained=False, copy=True) == "Copy"
    assert route_of(set(), trained=False, copy=False) == "Placeholder/Missing"


class FakeRun:
    """Builds a run directory the way a real run would leave it."""

    def __init__(self, root: Path, task: str = "arith", level: str = "L1") -> None:
        self.dir = root / "run"
        self.ws = self.dir / "workspace"
        for d in ("code", "output", "model", "data"):
            (self.ws / d).mkdir(parents=True)
        (self.dir / "agent").mkdir()
        self.recorder = CodeRecorder(self.dir, self.ws)
        self.indexer = ArtifactIndexer(self.dir, self.ws)
        self.task, self.level = task, level
        self.subs: list[SubmissionRecord] = []
        self.transcript: list[str] = []

    def script(self, name: str, text: str, *, run: bool = True) -> None:
        (self.ws / "code" / name).write_text(text)
        if run:
            self.transcript.append(f"$ python code/{name}")

    def model(self, path: str, parent: str, weights_hash: str, data: str = "data/train.jsonl") -> None:
        d = self.ws / path
        d.mkdir(parents=True)
        (d / "config.json").write_text(json.dumps({"model_type": "llama", "_name_or_path": parent}))
        (d / "a2rl_train_args.json").write_text(json.dumps({"model": parent, "data": data, "lr": 1e-4}))
        (d / "model.safetensors").write_bytes(b"")
        self._hash = weights_hash

    def submit(self, path: str, status: str, score: float | None, elapsed: float,
               weights_hash: str = "h", error: str | None = None) -> None:
        seq = len(self.subs) + 1
        rec = SubmissionRecord(id=f"s{seq:04d}", seq=seq, received_at=utcnow(), elapsed_s=elapsed,
                               model_path=path, resolved_path=str((self.ws / path).resolve()),
                               artifact_hash=weights_hash, status=status, score=score, baseline=10.0,
                               improvement=None if score is None else score - 10.0, error=error,
                               task_fingerprint="fp")
        self.subs.append(rec)
        (self.dir / "agent" / "transcript.log").write_text("\n".join(self.transcript))
        self.recorder.snapshot(rec.id, elapsed)
        self.indexer.scan(elapsed)

    def finish(self, base_hash: str = "BASE", sandboxed: bool = True) -> Path:
        self.recorder.snapshot("final", 1000)
        valid = [s for s in self.subs if s.valid and s.score is not None]
        best = max(valid, key=lambda s: (s.score, -s.seq)) if valid else None
        record = RunRecord(
            run_id="hand-made", status="finished", created_at=utcnow(),
            config=RunConfig(task=self.task, agent="cmd:x", model="m", mode="free", budget_s=3600,
                             sandbox="bwrap" if sandboxed else "none", eval_timeout_s=60, grace_s=1,
                             port=0, runs_dir=str(self.dir.parent)),
            versions={}, sandboxed=sandboxed,
            task=TaskInfo(name=self.task, version="1", level=self.level, reward_kind="rule", params={},
                          fingerprint="fp", n_heldout=3),
            model=ModelInfo(spec="m", source="local", path="/m", content_hash=base_hash, model_type="llama"),
            baseline=BaselineRecord(score=10.0, n_items=3, metrics={}, model_hash=base_hash,
                                    task_fingerprint="fp", evaluator_version="1", eval_seconds=1,
                                    computed_at=utcnow()),
            submissions=self.subs, exit_reason="agent_exited", agent_exit_code=0,
            best=BestSoFar(submission_id=best.id, score=best.score) if best and best.score else None,
            improvement=(best.score - 10.0) if best and best.score is not None else None)
        record.timings.agent_s = 1000
        (self.dir / "run.json").write_text(record.model_dump_json())
        return self.dir


def test_sft_only_run(tmp_path: Path) -> None:
    run = FakeRun(tmp_path)
    run.script("train.py", SFT)
    run.model("output/v1", str(run.ws / "model"), "h1")
    run.submit("output/v1", "scored", 30.0, 100, "h1")
    a = analyze_run(run.finish(), heldout=[])
    assert a.route == "SFT-only" and a.methods_in_best == ["SFT"]
    it = a.iterations[0]
    assert it.training_type == "SFT-only" and it.failure_type is None
    assert it.config == {"lr": 1e-4, "epochs": 3, "batch": 4}  # args file overrides the script
    assert "code/train.py" in it.changed_files
    assert a.metrics.time_to_first_improvement_s == 100 and a.metrics.best_at_submission == 1
    assert [(e.strategy, e.stage) for e in a.experiments] == [("full SFT", "from base")]
    assert "SFTTrainer" in (run.dir / "summary.md").read_text()


def test_sft_then_grpo_run(tmp_path: Path) -> None:
    run = FakeRun(tmp_path)
    run.script("sft.py", SFT)
    run.model("output/sft", str(run.ws / "model"), "h1")
    run.submit("output/sft", "scored", 30.0, 100, "h1")
    run.script("grpo.py", GRPO)
    run.model("output/grpo", "output/sft", "h2", data="code/rollouts.jsonl")
    run.submit("output/grpo", "scored", 45.0, 200, "h2")
    a = analyze_run(run.finish(), heldout=[])
    assert [it.training_type for it in a.iterations[:2]] == ["SFT-only", "SFT+RL"]
    assert a.route == "SFT+RL" and set(a.methods_in_best) == {"SFT", "GRPO"}
    assert [(e.strategy, e.data_source, e.stage) for e in a.experiments] == [
        ("full SFT", "curated", "from base"), ("RL", "self-generated", "from checkpoint")]
    assert a.strategy_changes == 1
    assert a.iterations[1].config["num_generations"] == 8


def test_copy_the_base_run(tmp_path: Path) -> None:
    run = FakeRun(tmp_path)
    (run.ws / "output" / "copy").mkdir()
    (run.ws / "output" / "copy" / "config.json").write_text('{"model_type": "llama"}')
    run.submit("output/copy", "baseline_copy", 10.0, 50, "BASE")
    a = analyze_run(run.finish(), heldout=[])
    assert a.route == "Copy" and a.iterations[0].failure_type is None
    assert a.experiments == []


def test_placeholder_run(tmp_path: Path) -> None:
    run = FakeRun(tmp_path)
    run.script("train.py", PLACEHOLDER)
    run.submit("output/v1", "rejected", None, 30, None, error="model_path 'output/v1' does not exist")
    a = analyze_run(run.finish(), heldout=[])
    assert a.route == "Placeholder/Missing"
    assert a.iterations[0].failure_type == "early coding failure"
    assert a.iterations[-1].failure_type == "early coding failure"
    assert a.metrics.valid_rate == 0.0


def test_regression_is_collapse_and_flat_is_data_design(tmp_path: Path) -> None:
    run = FakeRun(tmp_path)
    run.script("train.py", SFT)
    run.model("output/v1", str(run.ws / "model"), "h1")
    run.submit("output/v1", "scored", 30.0, 100, "h1")
    run.model("output/v2", "output/v1", "h2")
    run.submit("output/v2", "scored", 12.0, 200, "h2")
    run.model("output/v3", "output/v1", "h3")
    run.submit("output/v3", "failed", None, 300, "h3", error="evaluation failed")
    a = analyze_run(run.finish(), heldout=[])
    assert [it.failure_type for it in a.iterations[:3]] == [
        None, "training collapse/instability", "training collapse/instability"]
    flat = FakeRun(tmp_path / "flat")
    flat.script("train.py", SFT)
    flat.model("output/v1", str(flat.ws / "model"), "h1")
    flat.submit("output/v1", "scored", 9.0, 100, "h1")
    b = analyze_run(flat.finish(), heldout=[])
    assert b.iterations[0].failure_type == "reward/data design failure"


def test_planted_privileged_api_is_found(tmp_path: Path) -> None:
    run = FakeRun(tmp_path, task="alfworld", level="L3")
    run.script("rollout.py", "actions = info['admissible_commands'][0]\nplan = env.expert_plan\n")
    run.script("train.py", SFT)
    run.model("output/v1", str(run.ws / "model"), "h1")
    run.submit("output/v1", "scored", 5.0, 100, "h1")
    a = analyze_run(run.finish(), heldout=[])
    (finding,) = [f for f in a.findings if f.kind == "privileged-api"]
    assert finding.severity == "critical"
    assert any("code/rollout.py:1" in e for e in finding.evidence)
    assert any("expert_plan" in e for e in finding.evidence)
    assert a.iterations[0].failure_type == "static shortcut without transfer"


def test_training_on_heldout_items_is_found(tmp_path: Path) -> None:
    heldout = [{"question": "Calculate 12 + 7."}, {"question": "Calculate 80 - 3."},
               {"question": "A long question about apples and oranges that has many words in it."}]
    run = FakeRun(tmp_path)
    run.script("train.py", SFT)
    (run.ws / "code" / "extra.jsonl").write_text(json.dumps(
        {"q": "Calculate 12 + 7.", "a": "19"}) + "\n" + json.dumps(
        {"q": "so: a long question about apples and oranges that has many words", "a": "x"}) + "\n")
    run.model("output/v1", str(run.ws / "model"), "h1")
    run.submit("output/v1", "scored", 90.0, 100, "h1")
    a = analyze_run(run.finish(), heldout=heldout)
    (finding,) = [f for f in a.findings if f.kind == "contamination"]
    assert len(finding.evidence) == 2 and "Calculate 12 + 7." in finding.evidence
    assert "Calculate 80 - 3." not in finding.evidence
    assert finding.severity == "critical"  # 2 of 3 items


def test_contamination_none_when_disjoint() -> None:
    assert contamination({"a.jsonl": "Calculate 1 + 1."}, [{"question": "Calculate 2 + 2."}]) == []


def test_unsandboxed_and_probes_are_flagged(tmp_path: Path) -> None:
    run = FakeRun(tmp_path)
    run.script("peek.py", "open('../ledger.jsonl').read()\nimport openai\n")
    run.submit("../model", "rejected", None, 10, None,
               error="model_path '../model' resolves to /x, which is outside /y")
    (run.dir / "grader.log").write_text("WARNING rejected POST /submit: missing or wrong token\n")
    a = analyze_run(run.finish(sandboxed=False), heldout=[])
    kinds = {f.kind for f in a.findings}
    assert {"harness-probe", "grader-probe", "path-escape", "third-party-llm", "unsandboxed"} <= kinds


@pytest.mark.parametrize("name", ["summary.md", "summary.jsonl", "analysis.json"])
def test_outputs_written(tmp_path: Path, name: str) -> None:
    run = FakeRun(tmp_path)
    run.script("train.py", SFT)
    run.submit("output/v1", "rejected", None, 10, None, error="x does not exist")
    analyze_run(run.finish(), heldout=[])
    assert (run.dir / name).stat().st_size > 0


STRACE_LOG = """\
100 1000.000000 execve("/usr/bin/bash", ["bash", "-c", "python code/train.py --out output/v1"], 0x1 /* 3 vars */) = 0
101 1001.000000 execve("/usr/local/bin/python", ["python", "code/train.py", "--out", "output/v1"], 0x1 /* 3 vars */) = -1 ENOENT (No such file or directory)
101 1001.000100 execve("/usr/bin/python3", ["python3", "code/train.py", "--out", "output/v1"], 0x1 /* 3 vars */) = 0
101 1011.000000 +++ exited with 1 +++
102 1012.000000 execve("/usr/bin/python3", ["python3", "code/train.py", "--out", "output/v1"], 0x1 /* 3 vars */) = 0
103 1013.000000 execve("/usr/bin/ls", ["ls", "output"], 0x1 /* 3 vars */) = 0
103 1013.500000 +++ exited with 0 +++
102 1100.000000 +++ exited with 0 +++
104 1101.000000 execve("/usr/bin/curl", ["curl", "-X", "POST", "http://127.0.0.1:1/submit", "-d", "{\\"model_path\\": \\"output/v1\\"}"], 0x1 /* 3 vars */) = 0
104 1102.000000 +++ exited with 0 +++
105 1103.000000 execve("/usr/bin/sleep", ["sleep", "100"], 0x1 /* 3 vars */) = 0
105 1150.000000 +++ killed by SIGKILL +++
100 1150.000000 +++ exited with 0 +++
"""


def test_parse_exec_log() -> None:
    from a2rl.capture import parse_exec_log

    events = parse_exec_log(STRACE_LOG, 1000.0)
    by_pid = {e.pid: e for e in events}
    assert by_pid[101].program == "/usr/bin/python3" and by_pid[101].start_s == 1.0
    assert by_pid[101].exit_code == 1 and by_pid[101].end_s == 11.0
    assert by_pid[104].argv[-1] == '{"model_path": "output/v1"}'
    assert by_pid[105].exit_code == -9
    assert [e.pid for e in events] == [100, 101, 102, 103, 104, 105]


def test_traced_run_gives_experiments_and_phases(tmp_path: Path) -> None:
    run = FakeRun(tmp_path)
    run.script("train.py", SFT, run=False)  # the transcript says nothing: the trace does
    run.model("output/v1", "model", "h1")
    run.submit("output/v1", "scored", 30.0, 102, "h1")
    from a2rl.capture import parse_exec_log

    events = parse_exec_log(STRACE_LOG, 1000.0)
    (run.dir / "agent" / "exec.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
    a = analyze_run(run.finish(), heldout=[])
    assert a.exec_traced and a.route == "SFT-only"
    assert a.iterations[0].scripts == ["code/train.py"]
    # the crashed attempt and the rerun are both verified experiments
    assert [(e.exit_code, e.duration_s, e.path) for e in a.experiments] == [
        (1, 10.0, "output/v1"), (0, 88.0, "output/v1")]
    phases = {c["argv"].split()[0]: c["phase"] for c in a.commands}
    assert phases["ls"] == "exploration" and phases["curl"] == "evaluation"
    assert phases["sleep"] == "checkpoint/waiting"
    # a relaunch after a crash trains: its hours are training time, not debugging
    assert [c["phase"] for c in a.commands if c["argv"].startswith("python3")] == ["SFT", "SFT"]
    assert a.phase_seconds["SFT"] == 98.0 and "debugging" not in a.phase_seconds


def test_turn_phases_and_usage_from_the_event_log(tmp_path: Path) -> None:
    from a2rl.schema import AgentEvent

    run = FakeRun(tmp_path)
    run.script("train.py", SFT, run=False)
    run.script("grpo.py", GRPO, run=False)
    run.model("output/v1", "model", "h1")
    run.submit("output/v1", "scored", 30.0, 100, "h1")
    events = [
        AgentEvent(kind="command", turn=0, t_s=0, end_s=1, command="ls data", exit_code=0),
        AgentEvent(kind="usage", turn=0, t_s=1, input_tokens=1000, output_tokens=50, cost_usd=0.01),
        AgentEvent(kind="file_edit", turn=1, t_s=5, path="code/train.py"),
        AgentEvent(kind="command", turn=2, t_s=10, end_s=60, command="python code/train.py --lr 1e-5",
                   exit_code=0),
        AgentEvent(kind="command", turn=3, t_s=70, end_s=71,
                   command="curl -s -X POST $A2RL_GRADER_URL/submit -d '{}'", exit_code=0),
        AgentEvent(kind="command", turn=4, t_s=80, end_s=200, command="python code/grpo.py",
                   exit_code=0),
        AgentEvent(kind="file_edit", turn=5, t_s=210, path="notes/journal.md"),
        AgentEvent(kind="usage", turn=5, t_s=211, input_tokens=500, output_tokens=20, cost_usd=0.02),
    ]
    (run.dir / "agent" / "events.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
    a = analyze_run(run.finish(), heldout=[])
    assert [t["phase"] for t in a.turns] == ["exploration", "data/setup", "SFT", "evaluation", "RL",
                                             "journal/skill"]
    # time until the next turn goes to the launching turn's phase; the last runs to the end
    assert a.turn_phase_seconds["SFT"] == 60 and a.turn_phase_seconds["RL"] == 130
    assert a.turn_phase_seconds["journal/skill"] == 1000 - 210
    assert a.usage == {"input_tokens": 1500, "output_tokens": 70, "cost_usd": 0.03}
    assert "tokens in/out 1500/70" in (run.dir / "summary.md").read_text()


def test_parser_report_warnings_reach_analysis_json(tmp_path: Path) -> None:
    from a2rl.analysis._run_evidence import parse_warnings

    agent = tmp_path / "agent"
    agent.mkdir()
    assert parse_warnings(tmp_path) == []
    (agent / "parse_report.json").write_text(json.dumps({
        "warnings": ["3 unreadable line(s)"], "unparsed_lines": 3,
        "unknown_types": {"task_updated": 2}, "cli_errors": ["Loop detected"]}))
    got = parse_warnings(tmp_path)
    assert got[0] == "3 unreadable line(s)" and "task_updated ×2" in got[1]
    assert got[-1] == "the CLI reported: Loop detected"


def test_traced_config_launches_are_experiments(tmp_path: Path) -> None:
    """Programs the exec trace saw: a LLaMA-Factory config launch, a verl module launch with
    its torchrun worker, and polling; each training launch is one experiment."""
    from a2rl.schema import ExecEvent

    run = FakeRun(tmp_path)
    (run.ws / "code" / "lf_sft.yaml").write_text("model_name_or_path: model\nstage: sft\n"
                                                 "finetuning_type: lora\noutput_dir: output/v1\n")
    run.model("output/v1", "model", "h1")
    run.submit("output/v1", "scored", 30.0, 500, "h1")
    ws = str(run.ws)
    events = [
        ExecEvent(pid=1, start_s=10, end_s=400, exit_code=0, program="/venv/bin/llamafactory-cli",
                  argv=["llamafactory-cli", "train", f"{ws}/code/lf_sft.yaml"]),
        ExecEvent(pid=2, start_s=410, end_s=420, exit_code=0, program="/bin/sleep", argv=["sleep", "10"]),
        ExecEvent(pid=3, start_s=450, end_s=900, exit_code=0, program="/venv/bin/torchrun",
                  argv=["torchrun", "--nproc_per_node=2", "-m", "verl.trainer.main_ppo",
                        "algorithm.adv_estimator=grpo", "trainer.default_local_dir=output/v2"]),
        # the worker torchrun starts runs the same module: part of its launcher's experiment
        ExecEvent(pid=4, start_s=451, end_s=899, exit_code=0, program="/usr/bin/python3",
                  argv=["python3", "-m", "verl.trainer.main_ppo", "algorithm.adv_estimator=grpo"]),
        ExecEvent(pid=5, start_s=901, end_s=902, exit_code=0, program="/bin/bash",
                  argv=["bash", f"{ws}/timer.sh"]),
    ]
    (run.dir / "agent" / "exec.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
    a = analyze_run(run.finish(), heldout=[])
    assert [(e.method, e.strategy, e.framework) for e in a.experiments] == [
        ("SFT", "PEFT", "llamafactory"), ("GRPO", "RL", "verl")]
    assert a.experiments[0].script == "code/lf_sft.yaml"
    assert a.phase_seconds["SFT"] == 390.0 and a.phase_seconds["RL"] == 450.0
    assert a.phase_seconds["checkpoint/waiting"] == 11.0


def test_heldout_items_the_train_data_already_holds_are_not_the_agents_contamination(
        tmp_path: Path) -> None:
    """arith draws train and held-out items independently, so a few collide by chance: an agent
    that trains on the given data must not be flagged for them (a real sweep excluded every
    reference-agent run this way), while an item found only in the agent's data still is."""
    heldout = [{"question": "Calculate 12 + 7."}, {"question": "Calculate 80 - 3."},
               {"question": "Calculate 5 * 9."}]
    run = FakeRun(tmp_path)
    (run.ws / "data").mkdir(exist_ok=True)
    (run.ws / "data" / "train.jsonl").write_text(json.dumps(
        {"prompt": "Calculate 12 + 7.", "answer": "19"}) + "\n")
    run.script("train.py", SFT)
    (run.ws / "code" / "train_data.jsonl").write_text(
        json.dumps({"prompt": "Calculate 12 + 7.", "answer": "19"}) + "\n"
        + json.dumps({"prompt": "Calculate 5 * 9.", "answer": "45"}) + "\n")
    run.model("output/v1", str(run.ws / "model"), "h1")
    run.submit("output/v1", "scored", 90.0, 100, "h1")
    a = analyze_run(run.finish(), heldout=heldout)
    (flagged,) = [f for f in a.findings if f.kind == "contamination"]
    assert flagged.evidence == ["Calculate 5 * 9."] and flagged.severity == "critical"
    (given,) = [f for f in a.findings if f.kind == "heldout-in-train-data"]
    assert given.evidence == ["Calculate 12 + 7."] and given.severity == "info"
    # only the train-data collision: no contamination finding at all
    assert contamination({"c.jsonl": "Calculate 12 + 7."}, heldout[:1],
                         train_texts={"data/train.jsonl": "Calculate 12 + 7."})[0].kind \
        == "heldout-in-train-data"


def test_summary_reads_as_prose_and_a_refused_path_is_not_a_training_failure(tmp_path: Path) -> None:
    """summary.md opens with the overview, formats every number and never prints None; a
    submission the grader refused for its path after a working one carries the grader's reason
    and is not labelled a training collapse."""
    run = FakeRun(tmp_path)
    run.script("train.py", SFT)
    run.model("output/v1", str(run.ws / "model"), "h1")
    run.submit("output/v1", "scored", 30.0, 100, "h1")
    reason = "model_path '../../etc' is outside the workspace"
    run.submit("../../etc", "rejected", None, 200, None, error=reason)
    a = analyze_run(run.finish(), heldout=[])
    refused = a.iterations[1]
    assert refused.status == "rejected" and refused.failure_type is None
    assert refused.failure_evidence == reason
    text = (run.dir / "summary.md").read_text()
    assert text.startswith("# Run hand-made (arith): overview")
    assert text.index("overview") < text.index("## Iteration 1")
    assert "None" not in text and "collapse" not in text
    assert f"refused by the grader before any evaluation: {reason}" in text
    assert "baseline 10.00, best **30.00**, improvement +20.00" in text
    assert "2 submissions, 50% of them valid" in text


def test_training_size_and_steps_are_what_the_training_recorded() -> None:
    """A time-limited run stops before its planned steps: the steps it reached and the rows it
    trained on (saved with the model) are what the summary reports, not the arguments."""
    from a2rl.analysis._train_config import args_config

    saved = {"lr": 1e-4, "steps": 60, "max_train": 0, "step": 26, "examples": 1952}
    files = {"output/rft/c1/a2rl_train_args.json": json.dumps(saved)}
    config = args_config(files, "output/rft/c1")
    assert (config["steps"], config["data_size"], config["lr"]) == (26, 1952, 1e-4)
    # without a record of what was done, the arguments stay (0 = "all rows" is no size)
    files = {"output/v1/a2rl_train_args.json": json.dumps({"steps": 60, "max_train": 0})}
    assert args_config(files, "output/v1") == {"steps": 60}
