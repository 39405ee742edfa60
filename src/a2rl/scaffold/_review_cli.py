"""`a2rl review`'s former import path: a re-export of `a2rl.extensions.scaffold._review_cli`."""

from a2rl.extensions.scaffold._review_cli import pending_plan, review_run

__all__ = ["pending_plan", "review_run"]
