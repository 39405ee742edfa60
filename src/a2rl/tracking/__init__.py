"""Live tracking's former import path: a re-export of `a2rl.extensions.tracking` for callers
that still import it from here (the CLI's `--log-to` checks)."""

from a2rl.extensions.tracking import LiveTracker, check_tracking, open_tracker, run_payload

__all__ = ["LiveTracker", "check_tracking", "open_tracker", "run_payload"]
