"""Runs made by other harnesses, brought in as a2rl run directories (`a2rl import`) so that
`a2rl analyze` and every later report work on them. Each imported run.json says where it came
from and what could not be recovered."""

from a2rl.importers import posttrainbench, rdagent

HARNESSES = {"posttrainbench": posttrainbench, "rdagent": rdagent}

__all__ = ["HARNESSES", "posttrainbench", "rdagent"]
