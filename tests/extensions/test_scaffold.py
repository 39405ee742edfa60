"""The scaffold's parts, fast: options, the evaluator and reviewer against a scripted
OpenAI-compatible endpoint (good, malformed, refused, failing and slow replies), revision
checkpoints, the endpoints, `a2rl review`, and the analysis with known adoption figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from scaffold_support import DIAGNOSIS, EXPECTATION, FakeGrader, Judge, record

from a2rl._errors import A2RLError
from a2rl.capture._snapshots import CodeRecorder
from a2rl.extensions.scaffold import Scaffold, install
from a2rl.extensions.scaffold._analysis import render_scaffold, scaffold_analysis
from a2rl.extensions.scaffold._endpoints import scaffold_router
from a2rl.extensions.scaffold._review_cli import review_run
from a2rl.schema import (
    Experiment,
    RunAnalysis,
    RunConfig,
    RunRecord,
    ScaffoldConfig,
    parse_components,
    read_jsonl,
    scaffold_config,
)
from a2rl.schema._scaffold import (
    CheckpointEvent,
    Decision,
    EvaluatorReport,
    JournalEntry,
    LLMCall,
    Plan,
    PlanEvent,
    PlanReview,
    Strategy,
    StrategyChange,
    Suggestion,
)
from a2rl.tasks import get_task
from conftest import TINY_TASK, serve_on_loopback

PLAN = {"strategy": {"k": "SFT", "d": "given", "g": "base"}, "data": "data/train.jsonl",
        "budget_split": {"data": 0.2, "training": 0.6, "evaluation": 0.2},
        "evaluation_plan": "exact match on 20 train items held back"}


def make(tmp_path: Path, url: str | None = None, **options: Any) -> tuple[Scaffold, FakeGrader]:
    options.setdefault("components", ["journal", "evaluator", "plan-review", "revision"])
    config = ScaffoldConfig(llm_base_url=url, llm_model="scripted-judge" if url else None,
                            llm_retries=0, **options)
    ws = tmp_path / "ws"
    (ws / "code").mkdir(parents=True, exist_ok=True)
    (ws / "code" / "train.py").write_text("learning_rate = 1e-5\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    scaffold = Scaffold(config, run_dir, ws, get_task("arith", dict(TINY_TASK)), budget_s=100)
    grader = FakeGrader()
    scaffold.attach(grader)  # type: ignore[arg-type]
    return scaffold, grader


def evaluate_one(scaffold: Scaffold, grader: FakeGrader, sid: str = "s0001") -> EvaluatorReport:
    grader.finish(record(sid), evaluate=True, scaffold=scaffold)
    assert scaffold._evaluating[sid].wait(20)
    report = scaffold.report(sid)
    assert report is not None
    return report


# -- options ------------------------------------------------------------------------------------

def test_components_and_options_parse_and_fail_clearly() -> None:
    assert parse_components("revision, journal") == ["journal", "revision"]
    assert parse_components("all") == ["journal", "skills", "evaluator", "plan-review",
                                       "revision"]
    assert parse_components("none") == []
    with pytest.raises(A2RLError, match="unknown scaffold component.*jounral"):
        parse_components("jounral")
    config = scaffold_config("journal,revision", {"revision_every": "2",
                                                  "revision_fractions": "0.25,0.75",
                                                  "revision_plateau": "off",
                                                  "reviewer": "person"})
    assert (config.revision_every, config.revision_plateau, config.revision_fractions,
            config.reviewer) == (2, None, [0.25, 0.75], "person")
    with pytest.raises(A2RLError, match="unknown --scaffold-opt 'colour'"):
        scaffold_config("journal", {"colour": "red"})
    with pytest.raises(A2RLError, match="bad --scaffold-opt"):
        scaffold_config("journal", {"reviewer": "robot"})
    # recorded in run.json with the rest of the config
    rc = RunConfig(task="arith", agent="reference", model="m", mode="free", budget_s=1,
                   sandbox="bwrap", eval_timeout_s=1, grace_s=1, port=0, runs_dir="r",
                   scaffold=config)
    assert RunConfig.model_validate_json(rc.model_dump_json()).scaffold == config


def test_install_writes_the_tool_and_the_instructions_of_enabled_parts(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "instructions.md").write_text("# Instructions\n")
    (ws / "instructions.md").chmod(0o444)
    config = ScaffoldConfig(components=["journal", "revision"], revision_every=3)
    read_only = install(config, ws)
    assert read_only == [ws / "scaffold.sh"] and (ws / "scaffold.sh").stat().st_mode & 0o111
    text = (ws / "instructions.md").read_text()
    assert "### Experiment journal" in text and "### Strategy-revision checkpoints" in text
    assert "after every 3 evaluated submissions" in text and "50%" in text
    assert "### Evaluator agent" not in text and "### Plan review" not in text
    assert "$A2RL_GRADER_URL/scaffold" in text and "$$" not in text
    assert (ws / "instructions.md").stat().st_mode & 0o777 == 0o444


# -- evaluator and reviewer against a scripted endpoint ------------------------------------------

def test_evaluator_reports_typed_suggestions_into_the_journal(tmp_path: Path) -> None:
    judge = Judge()
    with serve_on_loopback(judge.app()) as port:
        scaffold, grader = make(tmp_path, f"http://127.0.0.1:{port}/v1", evaluator_items=0)
        scaffold.add_journal("plan", "SFT first", strategy=Strategy(k="full SFT", d="curated",
                                                                    g="from base"))
        report = evaluate_one(scaffold, grader)
    assert report.status == "ok" and report.expectation == EXPECTATION
    assert report.diagnosis == DIAGNOSIS and report.score == 50.0
    assert [(s.id, s.level) for s in report.suggestions] == [("s0001.1", "strategy"),
                                                             ("s0001.2", "execution")]
    assert report.suggestions[0].change == StrategyChange(k="RL")  # GRPO → paradigm RL
    assert report.suggestions[1].target == "learning_rate"
    assert report.strategy_at == Strategy(k="full SFT", d="curated", g="from base")
    # stage 1 asked for an expectation without the score; stage 2 carried the score
    first, second = (r["messages"][-1]["content"] for r in judge.requests)
    assert "Stage 1 of 2" in first and "50.0" not in first and "learning_rate = 1e-5" in first
    assert "Stage 2 of 2" in second and "score 50.0" in second
    kinds = [(e.kind, e.author) for e in scaffold.journal()]
    assert kinds == [("plan", "agent"), ("eval_result", "harness"), ("eval_analysis", "evaluator")]
    assert "s0001.2 execution target learning_rate" in scaffold.journal()[-1].text
    assert read_jsonl(scaffold.dir / "evaluations.jsonl", EvaluatorReport) == [report]


@pytest.mark.parametrize("mode,failure", [("malformed", "malformed"), ("refused", "refused"),
                                          ("plain", "refused"), ("http500", "http_error"),
                                          ("garbage", "malformed"), ("slow", "timeout")])
def test_evaluator_failures_are_recorded_and_the_run_goes_on(tmp_path: Path, mode: str,
                                                             failure: str) -> None:
    judge = Judge(mode=mode, slow_s=1.5)
    with serve_on_loopback(judge.app()) as port:
        scaffold, grader = make(tmp_path, f"http://127.0.0.1:{port}/v1", evaluator_items=0,
                                llm_timeout_s=0.4)
        report = evaluate_one(scaffold, grader)
        # the next submission is handled as usual (the failure did not stop anything)
        grader.finish(record("s0002", score=60.0), scaffold=scaffold)
    assert report.status == "failed" and report.suggestions == []
    assert report.error is not None and failure in report.error
    calls = read_jsonl(scaffold.dir / "llm_calls.jsonl", LLMCall)
    assert [(c.ok, c.failure) for c in calls] == [(False, failure)]
    assert [e.kind for e in scaffold.journal()] == ["eval_result", "eval_analysis",
                                                    "eval_result"]
    assert "failed" in scaffold.journal()[1].text


def test_unconfigured_endpoint_and_unscored_submission(tmp_path: Path) -> None:
    scaffold, grader = make(tmp_path, None)
    report = evaluate_one(scaffold, grader)
    assert report.status == "failed" and "unconfigured" in (report.error or "")
    grader.finish(record("s0002", status="failed", score=None), evaluate=True,
                  scaffold=scaffold)
    assert scaffold._evaluating["s0002"].wait(5)
    assert "not scored" in (scaffold.report("s0002").error or "")  # type: ignore[union-attr]


def test_llm_plan_review_revise_then_approve_and_failures(tmp_path: Path) -> None:
    judge = Judge(verdicts=["revise", "approve"])
    with serve_on_loopback(judge.app()) as port:
        scaffold, _ = make(tmp_path, f"http://127.0.0.1:{port}/v1")
        plan = Plan.model_validate(dict(PLAN, strategy=Strategy(k="full SFT", d="curated",
                                                                g="from base")))
        assert scaffold.plan_status() == "none"
        first = scaffold.submit_plan(plan)
        assert first.event == "reviewed" and first.review is not None
        assert first.review.verdict == "revise" and scaffold.plan_status() == "revise"
        assert first.reviewer == "llm:scripted-judge"
        second = scaffold.submit_plan(plan.model_copy(update={"strategy": Strategy(
            k="RL", d="curated", g="from base")}))
        assert second.review is not None and second.review.verdict == "approve"
        assert scaffold.plan_status() == "approved" and scaffold.strategy is not None
        assert "Earlier plans and their reviews" in judge.requests[-1]["messages"][-1]["content"]
        judge.mode = "refused"
        third = scaffold.submit_plan(plan)
    assert third.event == "review_failed" and "refused" in (third.error or "")
    assert scaffold.plan_status() == "unreviewed"
    events = read_jsonl(scaffold.dir / "plans.jsonl", PlanEvent)
    assert [(e.plan_id, e.event) for e in events] == [
        ("p01", "submitted"), ("p01", "reviewed"), ("p02", "submitted"), ("p02", "reviewed"),
        ("p03", "submitted"), ("p03", "review_failed")]


def test_person_review_through_a2rl_review(tmp_path: Path) -> None:
    scaffold, _ = make(tmp_path, None, reviewer="person")
    with pytest.raises(A2RLError, match="no plan .* waits"):
        review_run(scaffold.run_dir, verdict="approve", rationale="ok", changes=[])
    event = scaffold.submit_plan(Plan.model_validate(
        dict(PLAN, strategy=Strategy(k="full SFT", d="curated", g="from base"))))
    assert event.event == "submitted" and scaffold.plan_status() == "pending"
    with pytest.raises(A2RLError, match="neither approve nor revise"):
        review_run(scaffold.run_dir, verdict="maybe", rationale="x", changes=[])
    review_run(scaffold.run_dir, verdict="revise", rationale="RL fits a verifiable reward",
               changes=["use GRPO"])
    scaffold.ingest_reviews()
    assert scaffold.plan_status() == "revise"
    last = scaffold.plan_events()[-1]
    assert last.reviewer == "person" and last.review == PlanReview(
        verdict="revise", rationale="RL fits a verifiable reward", requested_changes=["use GRPO"])


# -- revision checkpoints -------------------------------------------------------------------------

def test_revision_triggers_queue_and_decisions(tmp_path: Path) -> None:
    scaffold, grader = make(tmp_path, None, components=["revision"], revision_every=2,
                            revision_plateau=2, revision_fractions=[0.5])
    grader.finish(record("s0001", score=40.0), scaffold=scaffold)
    assert scaffold.pending_checkpoint() is None
    grader.finish(record("s0002", score=50.0), scaffold=scaffold)  # 2 evaluated: every 2
    opened = scaffold.pending_checkpoint()
    assert opened is not None and opened.triggers == ["every 2 submissions"]
    assert opened.after_submission == "s0002"
    grader.finish(record("s0003", status="rejected", score=None), scaffold=scaffold)
    grader.finish(record("s0004", score=45.0), scaffold=scaffold)
    grader.finish(record("s0005", score=45.0), scaffold=scaffold)  # every 2 + plateau of 2
    grader.t = 60.0
    scaffold.check_fractions()  # queued behind the open one
    with pytest.raises(A2RLError, match="a switch needs the new strategy"):
        scaffold.decide("c01", Decision(action="switch", reason="try RL"))
    with pytest.raises(A2RLError, match="no checkpoint 'c09'"):
        scaffold.decide("c09", Decision(action="keep", reason="fine"))
    scaffold.decide("c01", Decision(action="keep", reason="still improving"))
    second = scaffold.pending_checkpoint()
    assert second is not None and second.triggers == [
        "every 2 submissions", "plateau of 2 submissions without a new best"]
    new = Strategy(k="RL", d="curated", g="from checkpoint")
    scaffold.decide("c02", Decision(action="switch", reason="plateau", strategy=new))
    assert scaffold.strategy == new
    third = scaffold.pending_checkpoint()
    assert third is not None and third.triggers == ["50% of the budget used"]
    scaffold.check_fractions()  # each fraction fires once
    events = read_jsonl(scaffold.dir / "checkpoints.jsonl", CheckpointEvent)
    assert [(e.checkpoint_id, e.event) for e in events] == [
        ("c01", "opened"), ("c01", "decided"), ("c02", "opened"), ("c02", "decided"),
        ("c03", "opened")]


# -- the endpoints ----------------------------------------------------------------------------

def test_endpoints_validate_and_refuse_disabled_components(tmp_path: Path) -> None:
    scaffold, grader = make(tmp_path, None, components=["journal", "revision"],
                            revision_every=1, revision_plateau=None, revision_fractions=[])
    app = FastAPI()
    app.include_router(scaffold_router(scaffold))
    client = TestClient(app)
    assert client.get("/scaffold").json()["components"] == ["journal", "revision"]
    # no Content-Type header, as agents often send it; strategy spellings normalised
    r = client.post("/scaffold/journal", content=json.dumps(
        {"kind": "plan", "text": "SFT first", "strategy": {"k": "sft", "d": "given", "g": "base"}}))
    assert r.status_code == 200, r.text
    entry = JournalEntry.model_validate(r.json())
    assert entry.strategy == Strategy(k="full SFT", d="curated", g="from base")
    assert entry.code_digest and entry.last_submission is None and entry.id == "j0001"
    bad = client.post("/scaffold/journal", content='{"kind": "diary", "text": "x"}')
    assert bad.status_code == 422 and "kind" in bad.json()["detail"]
    bad = client.post("/scaffold/journal", content=json.dumps(
        {"kind": "plan", "text": "x", "strategy": {"k": "magic", "d": "curated", "g": "from base"}}))
    assert bad.status_code == 422 and "use k in" in bad.json()["detail"]
    assert client.post("/scaffold/journal", content="not json").status_code == 422
    assert [e["id"] for e in client.get("/scaffold/journal?kind=plan").json()] == ["j0001"]
    off = client.post("/scaffold/plan", content=json.dumps(PLAN))
    assert off.status_code == 404 and "plan-review is off" in off.json()["detail"]
    assert client.get("/scaffold/evaluations/s0001").status_code == 404
    assert client.get("/scaffold/decision").json() is None
    grader.finish(record("s0001"), scaffold=scaffold)
    pending = client.get("/scaffold/decision").json()
    assert pending["checkpoint_id"] == "c01"
    wrong = client.post("/scaffold/decision", content=json.dumps(
        {"checkpoint_id": "c01", "action": "switch", "reason": "x"}))
    assert wrong.status_code == 409 and "needs the new strategy" in wrong.json()["detail"]
    ok = client.post("/scaffold/decision", content=json.dumps(
        {"checkpoint_id": "c01", "action": "switch", "reason": "RL now",
         "strategy": {"k": "GRPO", "d": "curated", "g": "checkpoint"}}))
    assert ok.status_code == 200 and ok.json()["decision"]["strategy"]["k"] == "RL"


def test_plan_endpoint_checks_the_budget_split(tmp_path: Path) -> None:
    scaffold, _ = make(tmp_path, None, reviewer="person")
    app = FastAPI()
    app.include_router(scaffold_router(scaffold))
    client = TestClient(app)
    bad = client.post("/scaffold/plan", content=json.dumps(
        dict(PLAN, budget_split={"training": 0.9, "evaluation": 0.3})))
    assert bad.status_code == 422 and "sum to 1" in bad.json()["detail"]
    extra = client.post("/scaffold/plan", content=json.dumps(dict(PLAN, notes="x")))
    assert extra.status_code == 422
    ok = client.post("/scaffold/plan", content=json.dumps(PLAN))
    assert ok.status_code == 200 and ok.json()["event"] == "submitted"
    assert client.get("/scaffold/plan").json()["status"] == "pending"
    for _ in range(19):  # each plan costs a reviewer call: 20 at most
        assert client.post("/scaffold/plan", content=json.dumps(PLAN)).status_code == 200
    capped = client.post("/scaffold/plan", content=json.dumps(PLAN))
    assert capped.status_code == 409 and "20 plans" in capped.json()["detail"]


# -- the analysis --------------------------------------------------------------------------------

def _experiment(t: float, k: str, path: str) -> Experiment:
    return Experiment(path=path, elapsed_s=t, parent=None, strategy=k, data_source="curated",
                      stage="from base")


def test_analysis_adoption_plan_review_and_checkpoints(tmp_path: Path) -> None:
    """A run whose figures are known by construction: two execution suggestions (one followed
    by a code change naming its target before the next same-strategy experiment, one not) and
    two strategy suggestions (one followed by an RL experiment, one never), a plan approved
    after the first training launch, a switch that was followed and a keep."""
    run_dir = tmp_path / "run"
    ws = tmp_path / "ws"
    (ws / "code").mkdir(parents=True)
    recorder = CodeRecorder(run_dir, ws)
    (ws / "code" / "train.py").write_text("learning_rate = 1e-5\nepochs = 1\n")
    recorder.snapshot("s0001", 100.0)
    (ws / "code" / "train.py").write_text("learning_rate = 5e-6\nepochs = 1\n")
    recorder.snapshot("t0001", 250.0)
    config = ScaffoldConfig(components=["journal", "evaluator", "plan-review", "revision"])
    run = RunRecord(run_id="r1", status="finished", created_at="2026-01-01T00:00:00Z",
                    config=RunConfig(task="arith", agent="codex", model="m", mode="free",
                                     budget_s=1000, sandbox="bwrap", eval_timeout_s=1,
                                     grace_s=1, port=0, runs_dir="r", scaffold=config),
                    versions={}, sandboxed=True)
    run.timings.agent_s = 1000.0
    (run_dir / "run.json").write_text(run.model_dump_json())
    d = run_dir / "scaffold"
    d.mkdir()

    def write(name: str, rows: list[Any]) -> None:
        (d / name).write_text("".join(r.model_dump_json() + "\n" for r in rows))

    now = "2026-01-01T00:00:00Z"
    write("evaluations.jsonl", [EvaluatorReport(
        submission_id="s0001", at=now, elapsed_s=150.0, status="ok", suggestions=[
            Suggestion(id="s0001.1", level="execution", text="lower lr", target="learning_rate"),
            Suggestion(id="s0001.2", level="execution", text="more epochs", target="epochs"),
            Suggestion(id="s0001.3", level="strategy", text="GRPO", change=StrategyChange(k="RL")),
            Suggestion(id="s0001.4", level="strategy", text="self-generate",
                       change=StrategyChange(d="self-generated"))])])
    write("journal.jsonl", [JournalEntry(seq=1, id="j0001", at=now, elapsed_s=160.0,
                                         kind="lesson", author="agent", text="lr",
                                         follows=["s0001.1", "s0001.3"])])
    sft = Strategy(k="full SFT", d="curated", g="from base")
    write("plans.jsonl", [
        PlanEvent(plan_id="p01", event="submitted", at=now, elapsed_s=10.0, plan=Plan(
            strategy=sft, data="d", budget_split={"all": 1.0}, evaluation_plan="e")),
        PlanEvent(plan_id="p01", event="reviewed", at=now, elapsed_s=60.0, reviewer="person",
                  review=PlanReview(verdict="approve", rationale="fine"))])
    write("checkpoints.jsonl", [
        CheckpointEvent(checkpoint_id="c01", event="opened", at=now, elapsed_s=300.0,
                        triggers=["every 2 submissions"]),
        CheckpointEvent(checkpoint_id="c01", event="decided", at=now, elapsed_s=310.0,
                        decision=Decision(action="switch", reason="plateau", strategy=Strategy(
                            k="RL", d="curated", g="from base"))),
        CheckpointEvent(checkpoint_id="c02", event="opened", at=now, elapsed_s=500.0,
                        triggers=["50% of the budget used"]),
        CheckpointEvent(checkpoint_id="c02", event="decided", at=now, elapsed_s=510.0,
                        decision=Decision(action="keep", reason="RL works"))])
    write("llm_calls.jsonl", [LLMCall(role="reviewer", at=now, seconds=1.0, ok=False,
                                      failure="timeout")])
    base_dir = tmp_path / "baseline"
    base_dir.mkdir()
    experiments = [_experiment(50.0, "full SFT", "output/v1"),
                   _experiment(260.0, "full SFT", "output/v2"),
                   _experiment(400.0, "RL", "output/v3"), _experiment(600.0, "RL", "output/v4")]
    analysis = RunAnalysis.model_construct(experiments=experiments,
                                           usage={"input_tokens": 3000, "output_tokens": 600})
    base = RunAnalysis.model_construct(experiments=[], usage={"input_tokens": 1000,
                                                              "output_tokens": 200})
    (base_dir / "analysis.json").write_text(base.model_dump_json())
    config.baseline_run = str(base_dir)
    (run_dir / "run.json").write_text(run.model_dump_json())
    result = scaffold_analysis(run_dir, analysis)
    assert result is not None
    adopted = {s.id: s.adopted for s in result.suggestions}
    assert adopted == {"s0001.1": True, "s0001.2": False, "s0001.3": True, "s0001.4": False}
    assert {s.id for s in result.suggestions if s.claimed} == {"s0001.1", "s0001.3"}
    assert "learning_rate = 5e-6" in (result.suggestions[0].evidence or "")
    assert (result.adoption["execution"].rate, result.adoption["strategy"].rate) == (0.5, 0.5)
    assert result.adoption_asymmetry == 0.0
    assert result.strategy_adoption_after_training is not None
    assert result.strategy_adoption_after_training.n == 2
    assert (result.approved_at_s, result.first_training_s, result.trained_before_approval,
            result.experiments_before_approval, result.plan_redirected) == (60.0, 50.0, True, 1,
                                                                            False)
    assert [(c.checkpoint_id, c.action, c.followed) for c in result.checkpoints] == [
        ("c01", "switch", True), ("c02", "keep", True)]
    assert (result.tokens, result.baseline_tokens, result.token_ratio) == (3600, 1200, 3.0)
    assert result.journal_by_kind == {"lesson": 1} and result.evaluation_failures == {
        "timeout": 1}
    text = render_scaffold(result)
    assert "execution 1/2 (50%), strategy 1/2 (50%)" in text
    assert "trained before approval: True" in text and "c01 (every 2 submissions) → switch" in text


def test_the_evaluator_only_ever_sees_train_visible_items(tmp_path: Path) -> None:
    """The items whose outputs the evaluator gets are what the task writes as train data (into
    a harness-private folder); no held-out question that is not also a train one is among
    them, and the prompts carry none."""
    from a2rl.extensions.scaffold import _prompts
    from a2rl.extensions.scaffold._core import train_items

    task = get_task("arith", dict(TINY_TASK))
    items = train_items(task, tmp_path / "view")
    train = {i["question"] for i in task.train_items()}
    secret = {i["question"] for i in task.heldout_items()} - train
    assert items and secret and {i["question"] for i in items} <= train
    assert not secret & {i["question"] for i in items}
    prompt = _prompts.diagnosis_prompt(expectation="e", score=1.0, status="scored", outputs=[])
    prompt += _prompts.expectation_prompt(task="arith", baseline=0, submission="s0001",
                                          model_path="output/v1", strategy=None, code={},
                                          journal=[], history=[])
    assert not any(q in prompt for q in secret)


def test_cli_scaffold_option_becomes_the_run_config_field() -> None:
    from a2rl.cli.run import _scaffold_option

    assert _scaffold_option(None, None) == {}
    got = _scaffold_option("journal,plan-review", ["reviewer=person", "revision_every=4"])
    assert got == {"scaffold": ScaffoldConfig(components=["journal", "plan-review"],
                                              reviewer="person", revision_every=4)}
    with pytest.raises(A2RLError, match="--scaffold-opt without --scaffold"):
        _scaffold_option(None, ["reviewer=person"])
    with pytest.raises(A2RLError, match="is not key=value"):
        _scaffold_option("journal", ["reviewer"])
