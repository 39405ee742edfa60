"""Records the grader persists and returns. Each field's docstring documents the on-disk format."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict

SubmissionStatus = Literal["pending", "scored", "baseline_copy", "failed", "rejected", "interrupted"]
VALID_STATUSES: tuple[SubmissionStatus, ...] = ("scored", "baseline_copy")


class SubmissionRecord(BaseModel):
    """One line of `ledger.jsonl`. A submission is written when accepted (status `pending`) and
    again when it ends; the last line with a given `id` is its current state."""

    model_config = ConfigDict(extra="forbid")

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
    baseline: float
    best: BestSoFar | None
    n_submissions: int
    remaining_seconds: float
    """Budget left on the grader's clock (the single clock of the run)."""
    budget_seconds: float
    elapsed_seconds: float
    pending: int
    """Submissions accepted and not yet evaluated."""
    accepting: bool
    """False once the budget is spent."""
