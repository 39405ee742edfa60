"""Records the grader persists and returns: the models now live in `a2rl.records`; re-exported
here for old imports."""

from a2rl.records import (
    TERMINAL_STATUSES,
    VALID_STATUSES,
    BestSoFar,
    FinalDesignation,
    FinalMode,
    FinalResult,
    KeepArtifacts,
    Split,
    StatusResponse,
    SubmissionRecord,
    SubmissionStatus,
    SubmitResponse,
)

__all__ = ["TERMINAL_STATUSES", "VALID_STATUSES", "BestSoFar", "FinalDesignation", "FinalMode",
           "FinalResult", "KeepArtifacts", "Split", "StatusResponse", "SubmissionRecord",
           "SubmissionStatus", "SubmitResponse"]
