"""Per-run analysis computed by the harness: summaries, routes, failures, metrics, audit."""

from a2rl.analysis._analyze import IterationBuilder, LiveSummary, analyze_run, render_markdown
from a2rl.analysis._audit import contamination
from a2rl.analysis._records import (
    Experiment,
    Finding,
    IterationSummary,
    ProcessMetrics,
    RunAnalysis,
)
from a2rl.analysis._routes import analyse_script, route_of, training_kind

__all__ = ["Experiment", "Finding", "IterationBuilder", "IterationSummary", "LiveSummary",
           "ProcessMetrics", "RunAnalysis", "analyse_script", "analyze_run", "contamination",
           "render_markdown", "route_of", "training_kind"]
