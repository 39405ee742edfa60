"""Benchmark tasks: the contract and registry (`_core`), shared helpers (`_lib`), and one package
per built-in task (`arith/`, `gsm8k/`, ... each with its scorer, data and prompts; loaded lazily).

A task author needs only this module: subclass `StaticTextTask` (one completion per held-out
prompt) or `InteractiveTask` (episodes in an environment), give it `TaskParams`, and register it
with `@tasks.register(name)` in its package under `a2rl/tasks/` (or under the `a2rl.tasks`
entry-point group from a package of its own).
"""

from a2rl._secrets import installation_seed
from a2rl.tasks._core import (
    BUILTIN_TASKS,
    DEFAULT_TASK,
    EPISODES_FILE,
    EvalOutcome,
    InteractiveTask,
    ItemVerdict,
    Level,
    ProgressCounter,
    RewardKind,
    StaticTextTask,
    Task,
    TaskParams,
    distinct_questions,
    get_task,
    list_tasks,
    secret_field,
    task_class,
    task_from_spec,
    task_mask_hooks,
)
from a2rl.tasks._core.offline import predictions_from_rows, read_predictions
from a2rl.tasks._core.registry import tasks
from a2rl.tasks._lib.judge import JudgeClient, JudgeError, JudgeSettings

__all__ = [
    "BUILTIN_TASKS", "DEFAULT_TASK", "EPISODES_FILE", "EvalOutcome", "InteractiveTask",
    "ItemVerdict", "JudgeClient", "JudgeError", "JudgeSettings", "Level", "ProgressCounter",
    "RewardKind", "StaticTextTask", "Task", "TaskParams", "distinct_questions", "get_task",
    "installation_seed", "list_tasks", "predictions_from_rows", "read_predictions", "secret_field",
    "task_class", "task_from_spec", "task_mask_hooks", "tasks",
]
