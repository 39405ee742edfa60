"""gsm8k: grade-school math word problems, scored like lm-evaluation-harness."""

from a2rl.tasks.gsm8k.task import GSM8KTask

__all__ = ["GSM8KTask"]
