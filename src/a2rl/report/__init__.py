"""`a2rl report`: a static HTML site (offline, plotly.js copied in) and CSV/Markdown tables from
many runs: leaderboard, mode ablation, scaling, trajectories and lineage, strategy tables, the
scaffold ablation (scaffold.html) and one page per run."""

from __future__ import annotations

from a2rl.report._site import build_report

__all__ = ["build_report"]
