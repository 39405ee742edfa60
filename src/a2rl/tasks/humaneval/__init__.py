"""humaneval: Python function synthesis, each completion run against its tests in a sandbox."""

from a2rl.tasks.humaneval.task import HumanEvalTask

__all__ = ["HumanEvalTask"]
