"""The grading server: the only source of scores. Its state lives outside the workspace."""

from a2rl.grader._artifact import SubmissionRejected, resolve_submission, snapshot_submission
from a2rl.grader._baseline import BaselineRecord, score_baseline
from a2rl.grader._evaluation import EVALUATOR_VERSION, EvalFailed, EvalJob, run_evaluation
from a2rl.grader._grader import Grader, GraderConfig, GraderEvents
from a2rl.grader._ledger import Ledger
from a2rl.grader._records import (
    BestSoFar,
    StatusResponse,
    SubmissionRecord,
    SubmissionStatus,
    SubmitResponse,
)
from a2rl.grader._server import GraderServer, create_app

__all__ = [
    "EVALUATOR_VERSION",
    "BaselineRecord",
    "BestSoFar",
    "EvalFailed",
    "EvalJob",
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
    "resolve_submission",
    "run_evaluation",
    "score_baseline",
    "snapshot_submission",
]
