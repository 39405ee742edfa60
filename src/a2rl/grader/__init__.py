"""The grading server: the only source of scores. Its state lives outside the workspace.

The names below are imported on first use (PEP 562): the evaluation child process imports
`a2rl.grader._evaluation`, and an eager package would load the HTTP server (fastapi) into every
evaluation for nothing (0.3 s of the harness's overhead per evaluation)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2rl._util import lazy_exports

if TYPE_CHECKING:
    from a2rl.grader._artifact import (
        STORE_DIR,
        SubmissionRejected,
        collect_blobs,
        open_submission,
        resolve_submission,
        snapshot_submission,
    )
    from a2rl.grader._baseline import baseline_cache_key, score_baseline
    from a2rl.grader._evaluation import EVALUATOR_VERSION, EvalFailed, run_evaluation
    from a2rl.grader._grader import Grader, GraderConfig, GraderEvents, read_final
    from a2rl.grader._items import item_values, restrict_to_items
    from a2rl.grader._ledger import Ledger
    from a2rl.grader._secret import (
        item_key,
        public_fingerprint,
        redacted_params,
        redacted_spec,
        restore_task,
        secret_fields,
    )
    from a2rl.grader._server import (
        GraderServer,
        PublicSubmission,
        SubmitRequest,
        create_app,
        parse_submit,
        visible_submission,
    )
    from a2rl.grader._stats import ScoreInterval, score_interval

_HOMES = {
    "baseline_cache_key": "a2rl.grader._baseline",
    "collect_blobs": "a2rl.grader._artifact",
    "create_app": "a2rl.grader._server",
    "EvalFailed": "a2rl.grader._evaluation",
    "EVALUATOR_VERSION": "a2rl.grader._evaluation",
    "Grader": "a2rl.grader._grader",
    "GraderConfig": "a2rl.grader._grader",
    "GraderEvents": "a2rl.grader._grader",
    "GraderServer": "a2rl.grader._server",
    "item_key": "a2rl.grader._secret",
    "item_values": "a2rl.grader._items",
    "restrict_to_items": "a2rl.grader._items",
    "Ledger": "a2rl.grader._ledger",
    "open_submission": "a2rl.grader._artifact",
    "parse_submit": "a2rl.grader._server",
    "public_fingerprint": "a2rl.grader._secret",
    "PublicSubmission": "a2rl.grader._server",
    "read_final": "a2rl.grader._grader",
    "redacted_params": "a2rl.grader._secret",
    "redacted_spec": "a2rl.grader._secret",
    "resolve_submission": "a2rl.grader._artifact",
    "restore_task": "a2rl.grader._secret",
    "run_evaluation": "a2rl.grader._evaluation",
    "score_baseline": "a2rl.grader._baseline",
    "score_interval": "a2rl.grader._stats",
    "ScoreInterval": "a2rl.grader._stats",
    "secret_fields": "a2rl.grader._secret",
    "snapshot_submission": "a2rl.grader._artifact",
    "STORE_DIR": "a2rl.grader._artifact",
    "SubmissionRejected": "a2rl.grader._artifact",
    "SubmitRequest": "a2rl.grader._server",
    "visible_submission": "a2rl.grader._server",
}
"""Where each public name is defined."""


__getattr__ = lazy_exports(__name__, _HOMES)

__all__ = [
    "EVALUATOR_VERSION", "EvalFailed", "Grader", "GraderConfig", "GraderEvents", "GraderServer",
    "Ledger", "PublicSubmission", "STORE_DIR", "ScoreInterval", "SubmissionRejected",
    "SubmitRequest", "baseline_cache_key", "collect_blobs", "create_app", "item_key", "item_values",
    "open_submission", "restrict_to_items", "parse_submit", "public_fingerprint", "read_final",
    "redacted_params", "redacted_spec", "resolve_submission", "restore_task", "run_evaluation",
    "score_baseline", "score_interval", "secret_fields", "snapshot_submission", "visible_submission",
]
