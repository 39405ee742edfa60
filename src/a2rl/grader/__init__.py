"""The grading server: the only source of scores. Its state lives outside the workspace.

The names below are imported on first use (PEP 562): the evaluation child process imports
`a2rl.grader._evaluation`, and an eager package would load the HTTP server (fastapi) into every
evaluation for nothing (0.3 s of the harness's overhead per evaluation)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a2rl.grader._artifact import (
        SubmissionRejected,
        open_submission,
        resolve_submission,
        snapshot_submission,
    )
    from a2rl.grader._baseline import BaselineRecord, score_baseline
    from a2rl.grader._evaluation import EVALUATOR_VERSION, EvalFailed, EvalJob, run_evaluation
    from a2rl.grader._grader import Grader, GraderConfig, GraderEvents, read_final
    from a2rl.grader._items import item_values
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

_HOMES = {
    "BaselineRecord": "a2rl.grader._baseline",
    "BestSoFar": "a2rl.grader._records",
    "EVALUATOR_VERSION": "a2rl.grader._evaluation",
    "EvalFailed": "a2rl.grader._evaluation",
    "EvalJob": "a2rl.grader._evaluation",
    "FinalDesignation": "a2rl.grader._records",
    "FinalMode": "a2rl.grader._records",
    "FinalResult": "a2rl.grader._records",
    "Grader": "a2rl.grader._grader",
    "GraderConfig": "a2rl.grader._grader",
    "GraderEvents": "a2rl.grader._grader",
    "GraderServer": "a2rl.grader._server",
    "KeepArtifacts": "a2rl.grader._records",
    "item_values": "a2rl.grader._items",
    "Ledger": "a2rl.grader._ledger",
    "ScoreInterval": "a2rl.grader._stats",
    "StatusResponse": "a2rl.grader._records",
    "SubmissionRecord": "a2rl.grader._records",
    "SubmissionRejected": "a2rl.grader._artifact",
    "SubmissionStatus": "a2rl.grader._records",
    "SubmitResponse": "a2rl.grader._records",
    "create_app": "a2rl.grader._server",
    "open_submission": "a2rl.grader._artifact",
    "public_fingerprint": "a2rl.grader._secret",
    "read_final": "a2rl.grader._grader",
    "redacted_params": "a2rl.grader._secret",
    "resolve_submission": "a2rl.grader._artifact",
    "restore_task": "a2rl.grader._secret",
    "run_evaluation": "a2rl.grader._evaluation",
    "score_baseline": "a2rl.grader._baseline",
    "score_interval": "a2rl.grader._stats",
    "snapshot_submission": "a2rl.grader._artifact",
}
"""Where each public name is defined."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value

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
    "item_values",
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
