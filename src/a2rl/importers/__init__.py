"""Runs made by other harnesses, brought in as a2rl run directories (`a2rl import`) so that
`a2rl analyze` and every later report work on them. Each imported run.json says where it came
from and what could not be recovered. `atif` also writes a2rl's runs in Harbor's trajectory
format (`a2rl export`)."""

from a2rl.importers import atif, harbor, posttrainbench, rdagent
from a2rl.importers._common import find_runs

HARNESSES = {"harbor": harbor, "posttrainbench": posttrainbench, "rdagent": rdagent}

__all__ = [
    "HARNESSES", "atif", "find_runs", "harbor", "posttrainbench", "rdagent",
]
