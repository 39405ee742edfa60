"""Records the grader persists and returns: the models now live in `a2rl.records`; re-exported
here for old imports."""

from a2rl.records import (
    VALID_STATUSES,
    BestSoFar,
    StatusResponse,
    SubmissionRecord,
    SubmissionStatus,
    SubmitResponse,
)

__all__ = ["VALID_STATUSES", "BestSoFar", "StatusResponse", "SubmissionRecord", "SubmissionStatus",
           "SubmitResponse"]
