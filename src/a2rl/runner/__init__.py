"""Orchestration of one run and its persistent record (run.json)."""

from a2rl.runner._lifecycle import repair_run
from a2rl.runner._run import new_run_id, package_versions, run, run_multi
from a2rl.runner._supervise import AgentProcess

__all__ = [
    "AgentProcess", "new_run_id", "package_versions", "repair_run", "run", "run_multi",
]
