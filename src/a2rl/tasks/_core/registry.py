"""Task registry (`tasks`). Each module or folder under `a2rl/tasks/` (a name without a leading
underscore) is the built-in task of that name (`_` read as `-`), whose class carries
`@tasks.register(name)`: adding a task is adding its folder. Third-party tasks register under
the `a2rl.tasks` entry-point group (`name = "pkg.module:Class"`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from a2rl._errors import A2RLError, validation_problems
from a2rl._plugins import Registry
from a2rl.tasks._core.task import Task, TaskSpec

tasks: Registry[type[Task]] = Registry("task", "a2rl.tasks", package="a2rl.tasks")
"""The tasks by name: the built-in task folders, then `a2rl.tasks` entry points."""
BUILTIN_TASKS: dict[str, str] = tasks.builtin
"""name -> module of the built-in tasks: the registry's own table, so an entry added here (a
module that registers the name when imported, or "module:Class") is a built-in task."""
DEFAULT_TASK = "arith"


def list_tasks() -> list[str]:
    return tasks.names()


def task_class(name: str) -> type[Task]:
    if name not in tasks:
        raise A2RLError(f"unknown task {name!r}", f"choose one of: {', '.join(tasks.names())}")
    try:
        cls = tasks.get(name)
    except (ImportError, A2RLError) as exc:
        # A missing module, raised by the task's import (or wrapped by the registry's loader
        # of "module:Class" targets): name it and the install.
        missing = exc if isinstance(exc, ImportError) else exc.__cause__
        if not isinstance(missing, ImportError):
            raise
        raise A2RLError(f"task {name!r} needs a package that is not installed: {missing.name}",
                        f"install it (pip install {missing.name}) or the a2rl extra that "
                        "provides it") from exc
    if not (isinstance(cls, type) and issubclass(cls, Task)) or getattr(cls, "name", None) != name:
        raise A2RLError(f"the task registered as {name!r} ({cls!r}) is not a Task subclass "
                        "named so", f"register a subclass of a2rl.tasks.Task with name = {name!r}")
    return cls


def get_task(name: str, params: dict[str, Any] | None = None) -> Task:
    cls = task_class(name)
    try:
        return cls(params)
    except ValueError as exc:  # pydantic ValidationError is a ValueError
        raise A2RLError(f"bad options for task {name!r}: {validation_problems(exc)}",
                        f"valid --task-opt keys: {', '.join(cls.Params.model_fields)} "
                        f"(`a2rl tasks show {name}` explains each)") from exc


def task_from_spec(spec: TaskSpec) -> Task:
    return get_task(spec.name, spec.params)


def task_mask_hooks(task_names: Iterable[str]) -> tuple[list[Path], list[Path]]:
    """(masked, visible) from the tasks' optional hooks. A task that fails to load (a missing
    optional dependency) contributes nothing: its data is then covered by (i) and (iii)."""
    masked: list[Path] = []
    visible: list[Path] = []
    for name in task_names:
        try:
            cls = task_class(name)
            masked += [Path(p) for p in getattr(cls, "sandbox_masked_paths", lambda: [])()]
            visible += [Path(p) for p in getattr(cls, "sandbox_visible_paths", lambda: [])()]
        except Exception:  # noqa: BLE001 - an optional hook must never stop a run
            continue
    return masked, visible
