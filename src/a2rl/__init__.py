"""a2rl: a benchmark harness for LLM agents that post-train LLMs (Agent² RL-Bench).

Data flow, one sub-package each: tasks → workspace → agents (in a sandbox) → grader → ledger →
runner (run.json). The public API is re-exported here lazily so `import a2rl` never loads torch.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "A2RLError": "a2rl._errors",
    "Task": "a2rl.tasks", "TaskParams": "a2rl.tasks", "EvalOutcome": "a2rl.tasks",
    "get_task": "a2rl.tasks", "list_tasks": "a2rl.tasks",
    "Agent": "a2rl.agents", "AgentContext": "a2rl.agents", "get_agent": "a2rl.agents",
    "resolve_model": "a2rl.models",
    "Grader": "a2rl.grader", "Ledger": "a2rl.grader", "SubmissionRecord": "a2rl.grader",
    "RunConfig": "a2rl.runner", "RunRecord": "a2rl.runner", "run": "a2rl.runner",
    "load_run": "a2rl.schema",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'a2rl' has no attribute {name!r}")
