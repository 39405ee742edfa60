"""Real runs with every scaffold component. Each CLI agent (Claude Code, Codex, Gemini,
OpenHands, OpenCode), driven by the scripted LLM server over its own protocol, works in the
sandbox (network none) on the tiny arith task: it writes journal entries, reads the skills, gets
its plan approved by the scripted reviewer, trains, submits with the evaluator, follows the
execution-level suggestion and not the strategy-level one, hits a revision checkpoint and
answers it. The analysis of each run must show exactly those adoption figures, and nothing the
scaffold added may carry a held-out item or the scaffold LLM's key. The reference agent runs
with the scaffold too (its plan approved before it trains, its journal, its decision)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from scaffold_support import DIAGNOSIS, EXPECTATION, Judge
from scripted_llm import FAKE_KEY, Script, Step, create_app
from scripted_llm._core import dump_requests, run_cli_agent

from a2rl.schema import COMPONENTS, ScaffoldConfig, read_jsonl
from a2rl.schema._scaffold import (
    CheckpointEvent,
    EvaluatorReport,
    JournalEntry,
    PlanEvent,
    ScaffoldAnalysis,
)
from a2rl.tasks import get_task
from conftest import TINY_TASK, serve_on_loopback

SCAFFOLD_KEY = "sk-scaffold-judge-SECRET-0123456789"
"""The evaluator/reviewer endpoint's key: it must reach the judge and nothing in the sandbox."""

TRAIN = '''\
"""Scripted 'training' (plumbing, not learning): copies the base model with one weight
nudged into output/<name>. The SFT recipe runs only when REAL_SFT is set."""
import os, shutil, sys
from safetensors.torch import load_file, save_file
LEARNING_RATE = 1e-5
name = sys.argv[1]
src, dst = os.environ["MODEL_PATH"], os.path.join(os.environ["OUTPUT_DIR"], name)
if os.environ.get("REAL_SFT"):
    from trl import SFTConfig, SFTTrainer
    trainer = SFTTrainer(model=src, train_dataset=None,
                         args=SFTConfig(output_dir=dst, learning_rate=LEARNING_RATE))
    trainer.train()
shutil.copytree(src, dst, dirs_exist_ok=True)
os.chmod(dst, 0o755)
for f in os.listdir(dst):
    os.chmod(os.path.join(dst, f), 0o644)
weights = load_file(os.path.join(dst, "model.safetensors"))
first = sorted(k for k, v in weights.items() if v.is_floating_point())[0]
weights[first] = weights[first] * (1.001 if name == "v1" else 1.002)
save_file(weights, os.path.join(dst, "model.safetensors"), metadata={"format": "pt"})
print("SAVED", dst)
'''
PLAN_JSON = json.dumps({"strategy": {"k": "full SFT", "d": "curated", "g": "from base"},
                        "data": "data/train.jsonl as given",
                        "budget_split": {"data": 0.1, "training": 0.7, "evaluation": 0.2},
                        "evaluation_plan": "exact match on held-back train items"})
# A blocking submit with the evaluator is silent for a while, and OpenHands' terminal hands
# control back after 30 s without output (the next step would then type into the running
# command): the work before `&` runs in the background while a loop ticks every 3 s.
SUBMIT = ('curl -s -X POST "$A2RL_GRADER_URL/submit" -H "Authorization: Bearer $A2RL_TOKEN" '
          "-d '{body}' > /tmp/reply.json & "
          "while kill -0 $! 2>/dev/null; do sleep 3; echo waiting; done; cat /tmp/reply.json")
# The shortest scenario that reaches every component, in five model turns (each CLI turn is
# seconds of its own start-up and bookkeeping): plan + plan review + skills + the script; train
# and submit with the evaluator; a lesson citing the execution suggestion, the suggested change,
# train and submit (the second submission opens the checkpoint); the decision and the journal
# read back. (Heredocs only in the first step: OpenHands' terminal takes a multi-line command
# with a background job as done too early.)
PLAN = (
    Step("./scaffold.sh state && ./scaffold.sh journal add plan 'Full SFT on the given data "
         "first.' --strategy 'full SFT,curated,from base' && mkdir -p code && "
         f"cat > code/plan.json <<'JSON'\n{PLAN_JSON}\nJSON\n"
         f"cat > code/train.py <<'PY'\n{TRAIN}PY\n"
         "./scaffold.sh plan code/plan.json && head -n 3 skills/*/SKILL.md; true",
         "Recording my plan, submitting it for review, reading the skills, writing the script."),
    Step("python code/train.py v1 && "
         + SUBMIT.format(body='{"model_path": "output/v1", "evaluate": true}'),
         "Training v1 and submitting it with the evaluator."),
    Step("./scaffold.sh journal add lesson 'Lowering the learning rate as suggested.' "
         "--follows s0001.2 && sed -i 's/^LEARNING_RATE = .*/LEARNING_RATE = 5e-6/' "
         "code/train.py && python code/train.py v2 && "
         + SUBMIT.format(body='{"model_path": "output/v2"}'),
         "Training v2 with a lower learning rate and submitting it."),
    Step("./scaffold.sh decide keep 'SFT still improves.' && ./scaffold.sh journal && "
         "./timer.sh", "Answering the revision checkpoint, reading my journal back."),
    Step(None, "Done."),
)


@dataclass(frozen=True)
class CLI:
    """How each CLI's own end-to-end test (tests/agents/test_agent_<name>.py) drives it."""

    agent: str
    protocol: str
    """The scripted server's protocol module."""
    key_env: str
    api_path: str = ""
    driver: str = "scripted-model"


CLIS = [CLI("claude-code", "anthropic", "ANTHROPIC_API_KEY"),
        CLI("codex", "responses", "OPENAI_API_KEY", "/v1"),
        CLI("gemini", "gemini", "GEMINI_API_KEY"),
        CLI("openhands", "chat", "LLM_API_KEY", "/v1", "openai/scripted-model"),
        CLI("opencode", "chat", "OPENAI_API_KEY", "/v1")]


def unescaped(text: str) -> str:
    """The grader's compact JSON as it sits in tool results, however many times the CLI's
    request encoded it (a tool output inside a JSON string inside the request body, ...)."""
    while '\\"' in text:
        text = text.replace('\\"', '"')
    return text


@pytest.mark.cli
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")
# The scaffold is the same for every CLI (./scaffold.sh and the grader's endpoints, reached
# through the CLI's shell tool), and each CLI's protocol and shell tool have their own end-to-end
# test (tests/agents/test_agent_<name>.py): the default suite runs the scaffold through Claude Code, the
# four other CLIs (minutes each) run in `make test-extended`.
@pytest.mark.parametrize("cli", [c if c.agent == "claude-code" else
                                 pytest.param(c, marks=pytest.mark.extended) for c in CLIS],
                         ids=[c.agent for c in CLIS])
def test_every_component_end_to_end(cli: CLI, tiny_model: Path, monkeypatch: pytest.MonkeyPatch,
                                    installed_cli) -> None:  # type: ignore[no-untyped-def]
    installed_cli(cli.agent)
    monkeypatch.delenv("CODEX_API_KEY", raising=False)  # codex would prefer it to the driver's
    skills = importlib.util.find_spec("a2rl.extensions.scaffold._mount") is not None
    components = [c for c in COMPONENTS if c != "skills" or skills]
    monkeypatch.setenv("A2RL_SCAFFOLD_API_KEY", SCAFFOLD_KEY)
    judge, script = Judge(), Script(plan=PLAN)
    with tempfile.TemporaryDirectory(prefix="sc-", dir="/tmp", ignore_cleanup_errors=True) as short, \
            serve_on_loopback(judge.app()) as judge_port, \
            serve_on_loopback(create_app(script, [cli.protocol])) as port:
        config = ScaffoldConfig(components=components,  # type: ignore[arg-type]
                                llm_base_url=f"http://127.0.0.1:{judge_port}/v1",
                                llm_model="scripted-judge", evaluator_items=4, revision_every=2,
                                revision_plateau=None, revision_fractions=[])
        # network none: the sandbox reaches only the grader and the scripted server (through a
        # unix socket bridge in the run folder: a short root keeps it inside AF_UNIX's limit)
        rec, run_dir = run_cli_agent(Path(short), tiny_model, cli.agent,
                                     f"http://127.0.0.1:{port}{cli.api_path}", monkeypatch,
                                     key_env=cli.key_env, driver=cli.driver, network="none",
                                     scaffold=config,
                                     # no periodic snapshot (the journal's tag is then known)
                                     # and a budget a loaded machine does not run out of
                                     snapshot_every_s=7200.0, budget_s=3600)
        dump_requests(script, Path(short) / "requests.jsonl")
        transcript = (run_dir / "agent" / "transcript.log").read_text()
        assert rec.status == "finished", (rec.error, transcript[-3000:])
        assert rec.config.scaffold == config  # recorded in run.json
        assert [(s.model_path, s.status) for s in rec.submissions] == [
            ("output/v1", "scored"), ("output/v2", "scored")], transcript[-3000:]
        sd = run_dir / "scaffold"
        journal = read_jsonl(sd / "journal.jsonl", JournalEntry)
        reports = read_jsonl(sd / "evaluations.jsonl", EvaluatorReport)
        plans = read_jsonl(sd / "plans.jsonl", PlanEvent)
        checkpoints = read_jsonl(sd / "checkpoints.jsonl", CheckpointEvent)
        analysis = ScaffoldAnalysis.model_validate_json((run_dir / "scaffold.json").read_text())
        summary = (run_dir / "summary.md").read_text()
        everything = {p: p.read_text(errors="ignore") for p in run_dir.rglob("*")
                      if p.is_file() and p.suffix != ".safetensors" and ".git" not in p.parts}
        sent = json.dumps(script.requests)

    # journal: the agent's two entries, the harness's scores, the evaluator's analysis
    assert [(e.kind, e.author) for e in journal] == [
        ("plan", "agent"), ("eval_result", "harness"), ("eval_analysis", "evaluator"),
        ("lesson", "agent"), ("eval_result", "harness")], journal
    assert journal[0].strategy is not None and journal[0].strategy.k == "full SFT"
    assert journal[3].follows == ["s0001.2"] and journal[3].last_submission == "s0001"
    assert journal[3].snapshot == "s0001" and journal[3].code_digest
    # plan review: approved by the LLM reviewer before any training
    assert [(e.plan_id, e.event, e.review.verdict if e.review else None) for e in plans] == [
        ("p01", "submitted", None), ("p01", "reviewed", "approve")]
    # the evaluator saw train-visible outputs, and its report reached the agent in the reply
    assert len(reports) == 1 and reports[0].status == "ok", reports
    assert reports[0].expectation == EXPECTATION and reports[0].outputs_shown == 4
    replies = unescaped(sent)
    assert DIAGNOSIS in sent and '"evaluator_status":"done"' in replies, replies[-3000:]
    # the revision checkpoint opened after the second submission and was answered
    assert [(c.checkpoint_id, c.event) for c in checkpoints] == [("c01", "opened"),
                                                                 ("c01", "decided")]
    assert checkpoints[0].triggers == ["every 2 submissions"]
    assert checkpoints[1].decision is not None and checkpoints[1].decision.action == "keep"
    assert '"pending_decision":{"version":1,"checkpoint_id":"c01"' in replies
    # the analysis: execution suggestion adopted (a same-strategy experiment after a code
    # change naming learning_rate), strategy suggestion (k → RL) not
    assert [(s.id, s.level, s.adopted) for s in analysis.suggestions] == [
        ("s0001.1", "strategy", False), ("s0001.2", "execution", True)], analysis.suggestions
    assert analysis.suggestions[1].claimed and "LEARNING_RATE = 5e-6" in (
        analysis.suggestions[1].evidence or "")
    assert analysis.adoption["execution"].rate == 1.0 and analysis.adoption["strategy"].rate == 0
    assert analysis.adoption_asymmetry == 1.0
    assert analysis.journal_by_kind == {"plan": 1, "lesson": 1}
    assert analysis.trained_before_approval is False and analysis.plans[0].outcome == "approve"
    assert analysis.first_training_s is not None and analysis.approved_at_s is not None
    assert [(c.action, c.followed) for c in analysis.checkpoints] == [("keep", None)]
    assert analysis.tokens and analysis.journal_seconds > 0
    if skills:  # the plan's `head -n 3 skills/*/SKILL.md` read every library skill once
        assert analysis.skill_consults and min(analysis.skill_consults.values()) >= 1, \
            analysis.skill_consults
    assert "## Scaffold (" in summary and "execution 1/1 (100%), strategy 0/1 (0%)" in summary
    # the key reached the judge and nothing else; no held-out item in anything scaffolded
    assert all(r.get("model") == "scripted-judge" and r["_auth"] == f"Bearer {SCAFFOLD_KEY}"
               for r in judge.requests)
    judged = json.dumps([{k: v for k, v in r.items() if k != "_auth"} for r in judge.requests])
    for path, text in everything.items():
        assert SCAFFOLD_KEY not in text and FAKE_KEY not in text, path
    task = get_task("arith", dict(TINY_TASK))
    train = {i["question"] for i in task.train_items()}
    secret = [i["question"] for i in task.heldout_items() if i["question"] not in train]
    assert secret
    scaffolded = "".join(t for p, t in everything.items() if sd in p.parents) + sent
    for question in secret:
        assert question not in judged and question not in scaffolded, question
