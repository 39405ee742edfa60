"""Runs made by other harnesses, brought in as a2rl run directories (`a2rl import`) so that
`a2rl analyze` and every later report work on them. Each imported run.json says where it came
from and what could not be recovered."""

from a2rl.importers import posttrainbench, rdagent
from a2rl.importers._common import find_runs

HARNESSES = {"posttrainbench": posttrainbench, "rdagent": rdagent}

__all__ = [
    "HARNESSES", "find_runs", "posttrainbench", "rdagent",
]
