"""Experiment trackers (W&B, MLflow) that receive a run while it goes: its configuration, the
baseline, each scored submission and, at the end, the result and its records (`--log-to`)."""

from a2rl.extensions.tracking._live import LiveTracker, check_tracking, open_tracker

__all__ = ["LiveTracker", "check_tracking", "open_tracker"]
