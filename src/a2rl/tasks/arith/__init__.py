"""arith: the demo task (one-line integer arithmetic, exact-match answers)."""

from a2rl.tasks.arith.task import ArithTask

__all__ = ["ArithTask"]
