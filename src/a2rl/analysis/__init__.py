"""Per-run analysis computed by the harness: summaries, routes, failures, metrics, audit.

What a run trained is read from what it launched (`_launch`: command lines; `_detect`:
scripts; `_configs`: config-driven frameworks); the vocabulary of methods is in `_methods`."""

from a2rl.analysis._analyze import IterationBuilder, LiveSummary, analyze_run, render_markdown
from a2rl.analysis._audit import contamination
from a2rl.analysis._launch import CommandReader
from a2rl.analysis._live_phase import PhaseNow, phase_so_far
from a2rl.analysis._phases import PHASES, span_union
from a2rl.analysis._routes import Detection, analyse_script, route_of, training_kind
from a2rl.records import (
    Experiment,
    Finding,
    IterationSummary,
    ProcessMetrics,
    RunAnalysis,
)

__all__ = ["PHASES", "CommandReader", "Detection", "Experiment", "Finding", "IterationBuilder",
           "IterationSummary", "LiveSummary", "PhaseNow", "ProcessMetrics", "RunAnalysis",
           "analyse_script", "analyze_run", "contamination", "phase_so_far", "render_markdown",
           "route_of", "span_union", "training_kind"]
