"""Benchmark tasks: the Task contract, the registry, and the built-in tasks (loaded lazily)."""

from a2rl.tasks._registry import (
    BUILTIN_TASKS,
    DEFAULT_TASK,
    get_task,
    list_tasks,
    task_class,
    task_from_spec,
)
from a2rl.tasks._static import ItemVerdict, StaticTextTask
from a2rl.tasks._task import EvalOutcome, Level, RewardKind, Task, TaskParams, TaskSpec

__all__ = [
    "BUILTIN_TASKS",
    "DEFAULT_TASK",
    "EvalOutcome",
    "ItemVerdict",
    "Level",
    "RewardKind",
    "StaticTextTask",
    "Task",
    "TaskParams",
    "TaskSpec",
    "get_task",
    "list_tasks",
    "task_class",
    "task_from_spec",
]
