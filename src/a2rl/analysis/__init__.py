"""Per-run analysis computed by the harness: summaries, routes, failures, metrics, audit.

What a run trained is read from what it launched (`_command_reader`: command lines;
`_script_reader`: scripts; `_configs`: config-driven frameworks); the vocabulary of methods is
in `_methods`."""

from a2rl.analysis._analyze import LiveSummary, analyze_run
from a2rl.analysis._audit import contamination
from a2rl.analysis._command_reader import CommandReader
from a2rl.analysis._detection import Detection
from a2rl.analysis._iterations import IterationBuilder
from a2rl.analysis._judge import ask_judge, judge_settings
from a2rl.analysis._live_phase import PhaseNow, phase_so_far
from a2rl.analysis._markdown import render_markdown
from a2rl.analysis._methods import route_of, training_kind
from a2rl.analysis._phases import PHASES, span_union
from a2rl.analysis._script_reader import analyze_script

__all__ = [
    "PHASES", "CommandReader", "Detection", "IterationBuilder", "LiveSummary", "PhaseNow",
    "analyze_script", "analyze_run", "ask_judge", "contamination", "judge_settings", "phase_so_far",
    "render_markdown", "route_of", "span_union", "training_kind",
]
