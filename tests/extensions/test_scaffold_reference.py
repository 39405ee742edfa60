"""The reference agent with every scaffold component on (fixed steps on the tiny model): its own
file so that it runs beside the five CLI cases of test_scaffold_e2e.py, not after them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from scaffold_support import Judge

from a2rl.schema import ScaffoldConfig, read_jsonl
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
"""The evaluator/reviewer endpoint's key (it reaches the judge only)."""


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")
def test_reference_agent_uses_the_scaffold(tmp_path: Path, tiny_model: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference agent (fixed steps on the tiny model, as in test_integration) with the
    scaffold on: it submits its plan and trains only once it is approved, journals its plan,
    dev measurements and a lesson, answers the revision checkpoint with an explicit decision and
    asks the evaluator to review its submissions, all through ./scaffold.sh."""
    from a2rl.runner import run
    from a2rl.schema import RunConfig

    monkeypatch.setenv("A2RL_SCAFFOLD_API_KEY", SCAFFOLD_KEY)
    judge = Judge()
    with serve_on_loopback(judge.app()) as judge_port:
        # a checkpoint at 0.01% of the budget (0.36 s, less than the agent's imports take):
        # open before the agent first looks; a budget a loaded machine does not run out of
        config = ScaffoldConfig(components=["journal", "evaluator", "plan-review", "revision"],
                                llm_base_url=f"http://127.0.0.1:{judge_port}/v1",
                                llm_model="scripted-judge", evaluator_items=0,
                                revision_every=None, revision_plateau=None,
                                revision_fractions=[0.0001])
        rec = run(RunConfig(task="arith", task_params=dict(TINY_TASK), agent="reference",
                            model=str(tiny_model), mode="free", budget_s=3600, sandbox="bwrap",
                            eval_timeout_s=1800, grace_s=2, port=0,
                            runs_dir=str(tmp_path / "runs"), scaffold=config,
                            agent_options={"steps": "2", "batch_size": "4", "max_train": "16"}))
    run_dir = tmp_path / "runs" / "arith" / rec.run_id
    transcript = (run_dir / "agent" / "transcript.log").read_text()
    assert rec.exit_reason == "agent_exited" and rec.agent_exit_code == 0, transcript[-3000:]
    assert [(s.model_path, s.status) for s in rec.submissions] == [
        ("output/v1", "scored"), ("output/v2", "scored")], transcript[-3000:]
    sd = run_dir / "scaffold"
    journal = read_jsonl(sd / "journal.jsonl", JournalEntry)
    plans = read_jsonl(sd / "plans.jsonl", PlanEvent)
    checkpoints = read_jsonl(sd / "checkpoints.jsonl", CheckpointEvent)
    reports = read_jsonl(sd / "evaluations.jsonl", EvaluatorReport)
    analysis = ScaffoldAnalysis.model_validate_json((run_dir / "scaffold.json").read_text())
    # the plan: the recipe in k/d/g terms, reviewed and approved before any training
    assert [(e.event, e.review.verdict if e.review else None) for e in plans] == [
        ("submitted", None), ("reviewed", "approve")], plans
    plan = plans[0].plan
    assert plan is not None and plan.strategy.model_dump() == {
        "k": "full SFT", "d": "self-generated", "g": "from base"}
    assert abs(sum(plan.budget_split.values()) - 1) < 0.01 and "dev" in plan.evaluation_plan
    assert "plan review: approved" in transcript
    assert analysis.plans[0].outcome == "approve" and analysis.trained_before_approval is False
    assert analysis.experiments_before_approval == 0
    assert analysis.approved_at_s is not None and analysis.first_training_s is not None
    assert analysis.approved_at_s < analysis.first_training_s
    # the journal: its plan (with the strategy), the base model's dev score, a lesson; the
    # harness adds each submission's score
    agent = [e for e in journal if e.author == "agent"]
    assert [e.kind for e in agent] == ["eval_result", "plan", "lesson"], agent
    assert agent[1].strategy is not None and agent[1].strategy.d == "self-generated"
    assert analysis.journal_by_kind == {"eval_result": 1, "plan": 1, "lesson": 1}
    assert analysis.journal_by_author.get("harness") == 2
    # the checkpoint (0.01% of the budget) answered with an explicit keep and its reason
    assert [(c.checkpoint_id, c.event) for c in checkpoints] == [("c01", "opened"),
                                                                 ("c01", "decided")]
    decision = checkpoints[1].decision
    assert decision is not None and decision.action == "keep" and decision.reason
    assert [c.action for c in analysis.checkpoints] == ["keep"]
    # the evaluator reviewed both submissions (score only: evaluator_items=0)
    assert sorted(r.submission_id for r in reports) == ["s0001", "s0002"]
    assert all(r.status == "ok" and r.outputs_shown == 0 for r in reports), reports
    if rec.exec_traced:  # the scaffold work went through the tool, seen like any agent's
        assert analysis.journal_seconds > 0
    task = get_task("arith", dict(TINY_TASK))
    train = {i["question"] for i in task.train_items()}
    judged = json.dumps([{k: v for k, v in r.items() if k != "_auth"} for r in judge.requests])
    for item in task.heldout_items():
        assert item["question"] in train or item["question"] not in judged
