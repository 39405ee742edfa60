"""The grading server: the only source of scores. Its state lives outside the workspace."""

from a2rl.grader._artifact import (
    SubmissionRejected,
    open_submission,
    resolve_submission,
    snapshot_submission,
)
from a2rl.grader._baseline import BaselineRecord, score_baseline
from a2rl.grader._evaluation import EVALUATOR_VERSION, EvalFailed, EvalJob, run_evaluation
from a2rl.grader._grader import Grader, GraderConfig, GraderEvents, read_final
from a2rl.grader._ledger import Ledger
from a2rl.grader._records import (
    BestSoFar,
    FinalDesignation,
    FinalMode,
    FinalResult,
    KeepArtifacts,
    StatusResponse,
    SubmissionRecord,
    SubmissionStatus,
    SubmitResponse,
)
from a2rl.grader._secret import public_fingerprint, redacted_params, restore_task
from a2rl.grader._server import GraderServer, create_app
from a2rl.grader._stats import ScoreInterval, score_interval

__all__ = [
    "EVALUATOR_VERSION",
    "BaselineRecord",
    "BestSoFar",
    "EvalFailed",
    "EvalJob",
    "FinalDesignation",
    "FinalMode",
    "FinalResult",
    "KeepArtifacts",
    "ScoreInterval",
    "Grader",
    "GraderConfig",
    "GraderEvents",
    "GraderServer",
    "Ledger",
    "StatusResponse",
    "SubmissionRecord",
    "SubmissionRejected",
    "SubmissionStatus",
    "SubmitResponse",
    "create_app",
    "open_submission",
    "public_fingerprint",
    "redacted_params",
    "read_final",
    "restore_task",
    "resolve_submission",
    "run_evaluation",
    "score_interval",
    "score_baseline",
    "snapshot_submission",
]
