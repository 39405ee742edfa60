"""Records of the grader: ledger lines, baseline, evaluation jobs and the HTTP answers.

Kept in step with a2rl.grader (whose modules re-export or validate into these).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import ConfigDict, Field

from a2rl.schema._base import Record
from a2rl.schema._engine import EngineInfo

SUBMISSION_FORMAT = 1
BASELINE_FORMAT = 1
EVAL_JOB_FORMAT = 1

SubmissionStatus = Literal["pending", "scored", "baseline_copy", "failed", "rejected", "interrupted"]
VALID_STATUSES: tuple[SubmissionStatus, ...] = ("scored", "baseline_copy")
TERMINAL_STATUSES: tuple[SubmissionStatus, ...] = ("scored", "baseline_copy", "failed", "rejected",
                                                   "interrupted")
Split = Literal["all", "dev", "test"]
FinalMode = Literal["off", "hidden"]
KeepArtifacts = Literal["best", "scored", "all"]


class ItemValues(Record):
    """`items.json` of an evaluation: one value in [0, 1] per held-out item scored."""


    keys: list[str] | None
    """Keyed ids of the items, in the order of `values` (None: the order could not be matched)."""
    values: list[float]
    """The item verdicts or rewards the score is built from."""
    field: str | None
    """Which detail field the values were read from."""
    seen: list[bool] | None = None
    """Per value: whether the item also occurs in the task's train-visible data (tasks that
    draw the splits independently measure it; None: not measured)."""


class SubmissionRecord(Record):
    """One line of `ledger.jsonl`. A submission is written when accepted (status `pending`) and
    again when it ends; the last line with a given `id` is its current state."""

    version: int = SUBMISSION_FORMAT
    """Format version of this record (files without it are version 1)."""

    model_config = ConfigDict(ser_json_inf_nan="strings", extra="forbid")

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
    """The folder that was opened, relative to the workspace (`output/v1`); never a host path.
    Symlinks are not followed anywhere on the way."""
    artifact_hash: str | None = None
    """Content hash of the submitted weights (tensor names, dtypes, shapes, bytes)."""
    content_key: str | None = None
    """Hash of everything the evaluator reads from the submission: the weights hash and the
    bytes of every other file (tokenizer, config, generation config, chat template, …). Cache
    hits and baseline copies match on this, never on the weights alone."""
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
    """The base model's score on the same evaluation (NaN, written \"NaN\", for an imported
    run whose harness did not record it)."""
    improvement: float | None = None
    """score − baseline."""
    eval_seconds: float | None = None
    """Wall time of the evaluation (0 for cache hits and baseline copies)."""
    finished_at: dt.datetime | None = None
    """When the submission reached its final status (UTC)."""
    error: str | None = None
    """Why the submission was rejected or failed, with what to do about it."""
    task_fingerprint: str
    """Keyed identity of the evaluation (task, version, options, held-out items); keyed with
    the installation's grader key, so it cannot be inverted to the held-out seed."""
    split: Split = "all"
    """Which held-out items scored it: all, dev (hidden-final runs: the agent's feedback) or test
    (the one final evaluation of a hidden-final run, never shown to the agent)."""
    n_items: int | None = None
    """Items the score was computed from."""
    ci_low: float | None = None
    """Lower bound of the score's 95 % confidence interval (0–100)."""
    ci_high: float | None = None
    """Upper bound of the score's 95 % confidence interval (0–100)."""
    ci_method: str | None = None
    """wilson (0/1 item verdicts), bootstrap (continuous item values) or bootstrap-shifted (the
    score is not an item mean); see a2rl.grader._stats."""
    significant: bool | None = None
    """Whether the score differs from the baseline beyond noise: a paired bootstrap over items
    when both have per-item values on the same items, else the baseline outside this CI."""
    unseen_score: float | None = None
    """Score (0–100) on the scored held-out items that do not occur in the train-visible data
    (None: the task does not measure that overlap, or every item occurs there)."""
    n_unseen: int | None = None
    """Items behind `unseen_score`."""
    final_of: str | None = None
    """On a test-split record: the id of the submission it is the final evaluation of."""
    note: str | None = None
    """Information about a valid submission (e.g. why a baseline copy scores the baseline);
    `error` is only ever set when something went wrong."""

    @property
    def valid(self) -> bool:
        return self.status in VALID_STATUSES


class BestSoFar(Record):
    """The best valid submission of a run."""

    submission_id: str
    """Id of the best valid submission (earliest on ties)."""
    score: float
    """Its score."""
    unseen_score: float | None = Field(default=None, exclude_if=lambda v: v is None)
    """Its score on the held-out items not in the train-visible data (see SubmissionRecord)."""


class SubmitResponse(Record):
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
    """The score was reused from an earlier submission with identical files."""
    error: str | None = None
    """Reason for rejection or failure, and the fix."""
    note: str | None = None
    """Information about a valid submission (e.g. a baseline copy), never an error."""
    ci_low: float | None = None
    """Lower bound of the score's 95 % confidence interval."""
    ci_high: float | None = None
    """Upper bound of the score's 95 % confidence interval."""
    significant: bool | None = None
    """False: the difference from the baseline is within noise (see `ci_low`/`ci_high`)."""
    split: Split = "all"
    """`dev` in a hidden-final run: this score comes from the dev half of the held-out items;
    the run's headline score is one final evaluation on a hidden test half."""


class StatusResponse(Record):
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
    final_mode: FinalMode = "off"
    """hidden: scores are on a dev split; one final model is scored once on a hidden test split."""
    final_designated: str | None = None
    """Submission the agent designated as its final model (POST /final), if any."""
    submissions_left: int | None = None
    """Submissions still allowed under the run's cap (None: no cap)."""


class FinalDesignation(Record):
    """What POST /final returns."""


    submission_id: str
    """The submission that will be scored on the hidden test split when the run ends."""
    model_path: str
    """Its path as submitted."""
    dev_score: float | None
    """Its score on the dev split."""


class FinalResult(Record):
    """The headline of a hidden-final run (`final.json` in the run directory): one model, scored
    once on held-out items that no feedback touched. Written by `Grader.run_final()`."""


    mode: FinalMode
    """hidden, or off (then no final evaluation ran and `score` is None)."""
    status: Literal["scored", "failed", "no_candidate", "off"]
    """scored; failed (the evaluation failed: `error` says why); no_candidate (no valid dev
    submission); off (the run was not a hidden-final run)."""
    submission_id: str | None
    """The dev submission that was scored on the test split."""
    record_id: str | None
    """Id of the test-split ledger record holding the final score."""
    chosen_by: Literal["agent", "best_dev", "none"]
    """agent (designated with POST /final or `final: true`) or best_dev (the best dev score)."""
    model_path: str | None
    """Path of that submission, as submitted."""
    dev_score: float | None
    """Its score on the dev split (what the agent saw)."""
    dev_baseline: float
    """The base model's score on the dev split."""
    score: float | None
    """The run's headline score: the final model on the hidden test split."""
    test_baseline: float | None
    """The base model's score on the test split."""
    improvement: float | None
    """score − test_baseline."""
    ci_low: float | None = None
    """Lower bound of the final score's 95 % confidence interval."""
    ci_high: float | None = None
    """Upper bound of the final score's 95 % confidence interval."""
    significant: bool | None = None
    """Whether the final score differs from the test baseline beyond noise."""
    n_items: int | None = None
    """Test items scored."""
    error: str | None = None
    """Why no final score was produced."""


class BaselineRecord(Record):
    """`baseline.json` in the run directory, and the cache entry under $A2RL_HOME/baselines/."""


    version: int = BASELINE_FORMAT
    """Format version of this record (files without it are version 1)."""

    score: float
    """The base model's score (0–100) on the held-out evaluation (the dev split in a
    hidden-final run: the number the agent's feedback is compared with)."""
    n_items: int
    """Items scored."""
    metrics: dict[str, float]
    """Secondary metrics from the same evaluation."""
    model_hash: str
    """Content hash of the base model's weights."""
    task_fingerprint: str
    """Keyed identity of the evaluation (task, version, options, held-out items)."""
    evaluator_version: str
    """a2rl's evaluator version; a change invalidates the cache."""
    eval_seconds: float
    """Wall time of the evaluation that produced this score."""
    computed_at: dt.datetime
    """When that evaluation ran (UTC)."""
    cached: bool = False
    """True when this run reused a cached baseline instead of evaluating again."""
    split: Split = "all"
    """all held-out items, or dev (hidden-final run; the test split is scored separately)."""
    ci_low: float | None = None
    """Lower bound of the score's 95 % confidence interval."""
    ci_high: float | None = None
    """Upper bound of the score's 95 % confidence interval."""
    ci_method: str | None = None
    """How the interval was computed (see a2rl.grader._stats)."""
    unseen_score: float | None = None
    """The base model's score on the held-out items not in the train-visible data."""
    n_unseen: int | None = None
    """Items behind `unseen_score`."""
    items: ItemValues | None = None
    """Per-item values behind `score` (for paired comparisons with submissions)."""
    test_score: float | None = None
    """Hidden-final runs: the base model's score on the hidden test split."""
    test_n_items: int | None = None
    """Items in the hidden test split."""
    test_ci_low: float | None = None
    """Lower bound of the test score's 95 % confidence interval."""
    test_ci_high: float | None = None
    """Upper bound of the test score's 95 % confidence interval."""
    test_items: ItemValues | None = None
    """Per-item values behind `test_score`."""


class TaskSpec(Record):
    """Enough to rebuild a task in another process (the evaluation child)."""


    name: str
    """Registered task name."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Task options after defaults."""


class EvalJob(Record):
    """What the evaluation child is asked to do (sent on its stdin; secret task options never go to disk)."""

    version: int = EVAL_JOB_FORMAT
    """Format version of this record (files without it are version 1)."""
    task: TaskSpec
    """What to evaluate with (the options include secrets: this object never goes to disk)."""
    model_dir: str
    """The checkpoint to evaluate (the grader's snapshot of the submission)."""
    chat_template_from: str | None
    """Folder whose tokenizer supplies the chat template when the submission has none."""
    out_dir: str
    """Where the child writes eval.log, details.jsonl and its result."""
    split: Split = "all"
    """all held-out items, or the dev / hidden test half of the grader's keyed split."""
    test_fraction: float = Field(0.5, gt=0.0, lt=1.0)
    """Share of the held-out items in the hidden test split."""
    secret_fields: list[str] = Field(default_factory=list)
    """Task options left out of the job file on disk (the held-out seed)."""
    snapshot: bool = False
    """model_dir is a submission's snapshot, checked again by the child before loading: only
    regular files, none naming a file outside it (a2rl.grader._artifact.verify_snapshot)."""
    engine: EngineInfo | None = None
    """The engine the child generates with, its interpreter and devices (None: the one
    selected in this process by the run, else transformers in a2rl's environment)."""
