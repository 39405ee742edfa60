"""Code snapshots and the artifact index while the agent works (`a2rl.capture` holds the
recorders and the readers of their records)."""

from a2rl.extensions.snapshots._recorder import RunRecorder

__all__ = ["RunRecorder"]
