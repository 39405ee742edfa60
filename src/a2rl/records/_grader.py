"""Records of the grader: ledger lines, baseline, evaluation jobs and the HTTP answers."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SUBMISSION_FORMAT = 1
BASELINE_FORMAT = 1
EVAL_JOB_FORMAT = 1

SubmissionStatus = Literal["pending", "scored", "baseline_copy", "failed", "rejected", "interrupted"]
VALID_STATUSES: tuple[SubmissionStatus, ...] = ("scored", "baseline_copy")


class SubmissionRecord(BaseModel):
    """One line of `ledger.jsonl`. A submission is written when accepted (status `pending`) and
    again when it ends; the last line with a given `id` is its current state."""

    # from_attributes: the grader's own copy of this class (until it imports this one) validates.
    model_config = ConfigDict(extra="forbid", from_attributes=True)

    version: int = SUBMISSION_FORMAT
    """Format version of this record (lines without it are version 1)."""
    id: str
    """Submission id, `s0001`, `s0002`, … in order of arrival; unique within the run."""
    seq: int
    """Position in arrival order (1-based)."""
    received_at: dt.datetime
    """When the grader received the request (UTC)."""
    elapsed_s: float | None = None
    """Seconds of the agent's budget used when the request arrived (None before the clock ran)."""
    model_path: str
    """The path exactly as the agent submitted it."""
    resolved_path: str | None = None
    """Where that path resolved (symlinks followed); must lie inside workspace/output/."""
    artifact_hash: str | None = None
    """Content hash of the submitted weights (tensor names, dtypes, shapes, bytes)."""
    artifact_dir: str | None = None
    """Snapshot of the submission that was evaluated, relative to the run directory."""
    status: SubmissionStatus
    """pending → scored | baseline_copy | failed; rejected = refused before evaluation;
    interrupted = the grader stopped before the evaluation finished."""
    cached: bool = False
    """True when the score was reused from an earlier evaluation of identical weights."""
    cached_from: str | None = None
    """Id of the submission whose evaluation was reused."""
    score: float | None = None
    """Task score (0–100) from the grader's own evaluation; None unless status is valid."""
    baseline: float
    """The base model's score on the same evaluation."""
    improvement: float | None = None
    """score − baseline."""
    eval_seconds: float | None = None
    """Wall time of the evaluation (0 for cache hits and baseline copies)."""
    finished_at: dt.datetime | None = None
    """When the submission reached its final status (UTC)."""
    error: str | None = None
    """Why the submission was rejected or failed, with what to do about it."""
    task_fingerprint: str
    """Identity of the evaluation (task, version, options, held-out items)."""

    @property
    def valid(self) -> bool:
        return self.status in VALID_STATUSES


class BestSoFar(BaseModel):
    """The best valid submission of a run."""

    model_config = ConfigDict(from_attributes=True)

    submission_id: str
    """Id of the best valid submission (earliest on ties)."""
    score: float
    """Its score."""


class SubmitResponse(BaseModel):
    """What POST /submit returns to the agent."""

    submission_id: str | None
    """Ledger id (None only when the request itself was malformed or unauthorised)."""
    status: SubmissionStatus
    """Final status, or `pending` when the agent asked not to wait."""
    score: float | None
    """Score of this submission on the held-out evaluation."""
    baseline: float
    """Score of the unmodified base model."""
    improvement: float | None
    """score − baseline."""
    best: BestSoFar | None
    """Best valid submission so far in this run."""
    n_submissions: int
    """Submissions recorded in this run so far (all statuses)."""
    cached: bool = False
    """The score was reused from an earlier submission with identical weights."""
    error: str | None = None
    """Reason for rejection or failure, and the fix."""


class StatusResponse(BaseModel):
    """What GET /status returns."""

    task: str
    """Registered name of the run's task."""
    baseline: float
    """Score of the unmodified base model."""
    best: BestSoFar | None
    """Best valid submission so far."""
    n_submissions: int
    """Submissions recorded so far (all statuses)."""
    remaining_seconds: float
    """Budget left on the grader's clock (the single clock of the run)."""
    budget_seconds: float
    """The agent's whole budget."""
    elapsed_seconds: float
    """Budget used so far."""
    pending: int
    """Submissions accepted and not yet evaluated."""
    accepting: bool
    """False once the budget is spent."""


class BaselineRecord(BaseModel):
    """`baseline.json` in the run directory, and the cache entry under $A2RL_HOME/baselines/."""

    model_config = ConfigDict(from_attributes=True)

    version: int = BASELINE_FORMAT
    """Format version of this record."""
    score: float
    """The base model's score (0–100) on the held-out evaluation."""
    n_items: int
    """Items scored."""
    metrics: dict[str, float]
    """Secondary metrics from the same evaluation."""
    model_hash: str
    """Content hash of the base model's weights."""
    task_fingerprint: str
    """Identity of the evaluation (task, version, options, held-out items)."""
    evaluator_version: str
    """a2rl's evaluator version; a change invalidates the cache."""
    eval_seconds: float
    """Wall time of the evaluation that produced this score."""
    computed_at: dt.datetime
    """When that evaluation ran (UTC)."""
    cached: bool = False
    """True when this run reused a cached baseline instead of evaluating again."""


class TaskSpec(BaseModel):
    """Enough to rebuild a task in another process (the evaluation child)."""

    model_config = ConfigDict(from_attributes=True)

    name: str
    """Registered task name."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Task options after defaults."""


class EvalJob(BaseModel):
    """`job.json` in an evaluation folder: what the evaluation child is asked to do."""

    model_config = ConfigDict(from_attributes=True)

    version: int = EVAL_JOB_FORMAT
    """Format version of this record."""
    task: TaskSpec
    """The task to evaluate on."""
    model_dir: str
    """The checkpoint to evaluate (the grader's snapshot of the submission)."""
    chat_template_from: str | None
    """Folder whose tokenizer supplies the chat template when the submission has none."""
    out_dir: str
    """Where the child writes eval.log, details.jsonl and its result."""
