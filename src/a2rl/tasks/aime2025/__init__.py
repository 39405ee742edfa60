"""aime2025: AIME 2025 competition maths, pass@k scored like lm-eval's aime25 task."""

from a2rl.tasks.aime2025.task import AIME2025Task

__all__ = ["AIME2025Task"]
