"""The scaffold's routes on the grader (same bearer token as /submit): the `/scaffold/...`
endpoints, and /submit and GET /submissions/{id} with the scaffold's part of the reply.

Bodies are parsed by hand, as /submit does, because agents often POST JSON without a
Content-Type header. A component that is off answers 404 saying so.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from a2rl import schema as rec
from a2rl._errors import A2RLError
from a2rl.extensions.scaffold._core import Scaffold, normalize_strategy, strategy_fix
from a2rl.grader import PublicSubmission, SubmitRequest, parse_submit, visible_submission
from a2rl.schema import SubmitResponse

PLAN_HELP = ('{"strategy": {"k": "full SFT", "d": "curated", "g": "from base"}, "data": "...", '
             '"budget_split": {"data": 0.2, "training": 0.6, "evaluation": 0.2}, '
             '"evaluation_plan": "..."}')
DECISION_HELP = ('{"checkpoint_id": "c01", "action": "keep", "reason": "..."} or {"checkpoint_id"'
                 ': "c01", "action": "switch", "reason": "...", "strategy": {"k": "RL", '
                 '"d": "curated", "g": "from checkpoint"}}')


class JournalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: rec.JournalKind
    text: str = Field(min_length=1, max_length=8000)
    strategy: rec.Strategy | None = None
    follows: list[str] = Field(default_factory=list, max_length=20)


class DecisionRequest(rec.Decision):
    checkpoint_id: str


class ScaffoldState(BaseModel):
    """GET /scaffold: what is on, and what waits for the agent."""

    components: list[str]
    plan_status: rec.PlanStatus | None
    pending_decision: rec.CheckpointEvent | None
    strategy: rec.Strategy | None


class PlanState(BaseModel):
    status: rec.PlanStatus
    events: list[rec.PlanEvent]


class PendingEvaluation(BaseModel):
    submission_id: str
    status: Literal["pending", "not_requested"]


def _body(raw: bytes, model: type[BaseModel], expected: str) -> Any:
    try:
        data = json.loads(raw or b"null")
    except ValueError:
        raise HTTPException(422, detail=f"the body is not JSON. Expected: {expected}") from None
    if isinstance(data, dict) and isinstance(data.get("strategy"), dict):
        data["strategy"] = normalize_strategy(data["strategy"])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e.get('loc', ()))) or 'body'}: {e.get('msg')}"
                             for e in exc.errors()[:5])
        hint = f" ({strategy_fix()})" if "strategy" in problems else ""
        raise HTTPException(422, detail=f"malformed request ({problems}){hint}. "
                            f"Expected: {expected}") from None


def scaffold_router(scaffold: Scaffold) -> APIRouter:
    router = APIRouter(prefix="/scaffold")

    def need(component: str) -> None:
        if not scaffold.on(component):
            raise HTTPException(404, detail=f"the scaffold's {component} is off in this run "
                                f"(on: {', '.join(sorted(scaffold.enabled)) or 'nothing'})")

    @router.get("", response_model=ScaffoldState)
    def state() -> ScaffoldState:
        scaffold.ingest_reviews()
        return ScaffoldState(components=sorted(scaffold.enabled),
                             plan_status=scaffold.plan_status()
                             if scaffold.on("plan-review") else None,
                             pending_decision=scaffold.pending_checkpoint(),
                             strategy=scaffold.strategy)

    @router.post("/journal", response_model=rec.JournalEntry)
    async def add(request: Request) -> rec.JournalEntry:
        need("journal")
        body = _body(await request.body(), JournalRequest,
                     '{"kind": "plan|observation|lesson|eval_result|eval_analysis", '
                     '"text": "...", "follows": ["s0002.1"]}')
        try:
            return await run_in_threadpool(scaffold.add_journal, body.kind, body.text,
                                           strategy=body.strategy, follows=body.follows)
        except A2RLError as exc:
            raise HTTPException(409, detail=str(exc)) from None

    @router.get("/journal", response_model=list[rec.JournalEntry])
    def read(kind: str | None = None) -> list[rec.JournalEntry]:
        need("journal")
        return [e for e in scaffold.journal() if kind is None or e.kind == kind]

    @router.post("/plan", response_model=rec.PlanEvent)
    async def plan(request: Request) -> rec.PlanEvent:
        need("plan-review")
        body = _body(await request.body(), rec.Plan, PLAN_HELP)
        total = sum(body.budget_split.values())
        if not body.budget_split or abs(total - 1.0) > 0.05 or min(
                body.budget_split.values()) < 0:
            raise HTTPException(422, detail=f"budget_split shares must be ≥ 0 and sum to 1 "
                                f"(they sum to {total:.2f}). Expected: {PLAN_HELP}")
        try:
            return await run_in_threadpool(scaffold.submit_plan, body)
        except A2RLError as exc:
            raise HTTPException(409, detail=str(exc)) from None

    @router.get("/plan", response_model=PlanState)
    def plan_state() -> PlanState:
        need("plan-review")
        scaffold.ingest_reviews()
        return PlanState(status=scaffold.plan_status(),
                         events=scaffold.plan_events())

    @router.get("/decision", response_model=rec.CheckpointEvent | None)
    def pending() -> rec.CheckpointEvent | None:
        need("revision")
        scaffold.check_fractions()
        return scaffold.pending_checkpoint()

    @router.post("/decision", response_model=rec.CheckpointEvent)
    async def decide(request: Request) -> rec.CheckpointEvent:
        need("revision")
        body = _body(await request.body(), DecisionRequest, DECISION_HELP)
        try:
            return scaffold.decide(body.checkpoint_id, rec.Decision(
                action=body.action, reason=body.reason, strategy=body.strategy))
        except A2RLError as exc:
            raise HTTPException(409, detail=str(exc)) from None

    @router.get("/evaluations/{submission_id}",
                response_model=rec.EvaluatorReport | PendingEvaluation)
    def evaluation(submission_id: str) -> rec.EvaluatorReport | PendingEvaluation:
        need("evaluator")
        report = scaffold.report(submission_id)
        if report is not None:
            return report
        notice = scaffold.notice(submission_id)
        return PendingEvaluation(submission_id=submission_id[:40],
                                 status="pending" if notice.evaluator_status == "pending"
                                 else "not_requested")

    return router


class ScaffoldSubmitRequest(SubmitRequest):
    """/submit in a scaffold run."""

    evaluate: bool = False
    """Have the evaluator agent review this submission (component `evaluator`)."""


class ScaffoldSubmitResponse(SubmitResponse):
    """/submit in a scaffold run: the grader's reply plus the scaffold's part."""

    scaffold: rec.ScaffoldNotice
    """Evaluator report (when asked), pending revision decision, plan-review state."""


class ScaffoldPublicSubmission(PublicSubmission):
    """GET /submissions/{id} in a scaffold run: the record plus the scaffold's part."""

    scaffold: rec.ScaffoldNotice


def submission_router(scaffold: Scaffold) -> APIRouter:
    """/submit and GET /submissions/{id} of a scaffold run (they replace the grader's own)."""
    router = APIRouter()

    @router.post("/submit", response_model=ScaffoldSubmitResponse)
    async def submit(request: Request) -> ScaffoldSubmitResponse:
        body = parse_submit(await request.body(), ScaffoldSubmitRequest)
        assert isinstance(body, ScaffoldSubmitRequest)
        try:
            reply, notice = await run_in_threadpool(scaffold.submit, body.model_path,
                                                    wait=body.wait, final=body.final,
                                                    evaluate=body.evaluate)
        except A2RLError as exc:
            raise HTTPException(422, detail=str(exc)) from None
        return ScaffoldSubmitResponse(**reply.model_dump(), scaffold=notice)

    @router.get("/submissions/{submission_id}", response_model=ScaffoldPublicSubmission)
    def submission(submission_id: str) -> ScaffoldPublicSubmission:
        assert scaffold.grader is not None
        found = visible_submission(scaffold.grader, submission_id)
        return ScaffoldPublicSubmission(**PublicSubmission.of(found).model_dump(),
                                        scaffold=scaffold.notice(found.id))

    return router
