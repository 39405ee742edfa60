"""The task contract: `Task`, its static and interactive kinds, their parameters, the registry."""

from a2rl.tasks._core.interactive import EPISODES_FILE, InteractiveTask
from a2rl.tasks._core.registry import (
    BUILTIN_TASKS,
    DEFAULT_TASK,
    get_task,
    list_tasks,
    task_class,
    task_from_spec,
    task_mask_hooks,
)
from a2rl.tasks._core.static import ItemVerdict, StaticTextTask, distinct_questions
from a2rl.tasks._core.task import (
    EvalOutcome,
    Level,
    ProgressCounter,
    RewardKind,
    Task,
    TaskParams,
    TaskSpec,
    secret_field,
)

__all__ = [
    "BUILTIN_TASKS",
    "DEFAULT_TASK",
    "EPISODES_FILE",
    "EvalOutcome",
    "InteractiveTask",
    "ItemVerdict",
    "Level",
    "ProgressCounter",
    "RewardKind",
    "StaticTextTask",
    "Task",
    "TaskParams",
    "TaskSpec",
    "distinct_questions",
    "get_task",
    "list_tasks",
    "secret_field",
    "task_mask_hooks",
    "task_class",
    "task_from_spec",
]
