"""The analysis records live in `a2rl.records`; re-exported for old imports."""

from a2rl.records import (
    Experiment,
    FailureType,
    Finding,
    IterationSummary,
    ProcessMetrics,
    RunAnalysis,
    Severity,
)

__all__ = ["Experiment", "FailureType", "Finding", "IterationSummary", "ProcessMetrics",
           "RunAnalysis", "Severity"]
