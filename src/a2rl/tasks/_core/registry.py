"""Task registry. Adding a task = one package under `a2rl/tasks/` + one line in BUILTIN_TASKS (or an
entry point in the `a2rl.tasks` group)."""

from __future__ import annotations

from typing import Any

from a2rl._errors import A2RLError, validation_problems
from a2rl._plugins import load, registered
from a2rl.tasks._core.task import Task, TaskSpec

# name -> "module:Class". Imported lazily so `import a2rl` stays light.
BUILTIN_TASKS: dict[str, str] = {
    "arith": "a2rl.tasks.arith:ArithTask",
    "gsm8k": "a2rl.tasks.gsm8k:GSM8KTask",
    "humaneval": "a2rl.tasks.humaneval:HumanEvalTask",
    "alpacaeval": "a2rl.tasks.alpacaeval:AlpacaEvalTask",
    "deepsearchqa": "a2rl.tasks.deepsearchqa:DeepSearchQATask",
    "webshop": "a2rl.tasks.webshop:WebShopTask",
    "alfworld": "a2rl.tasks.alfworld:ALFWorldTask",
    "aime2025": "a2rl.tasks.aime2025:AIME2025Task",
}
DEFAULT_TASK = "arith"


def _all_tasks() -> dict[str, str]:
    return registered(BUILTIN_TASKS, "a2rl.tasks")


def list_tasks() -> list[str]:
    return sorted(_all_tasks())


def task_class(name: str) -> type[Task]:
    tasks = _all_tasks()
    if name not in tasks:
        raise A2RLError(f"unknown task {name!r}", f"choose one of: {', '.join(sorted(tasks))}")
    try:
        cls = load(tasks[name])
    except ImportError as exc:
        raise A2RLError(f"task {name!r} needs a package that is not installed: {exc.name}",
                        f"install it (pip install {exc.name}) or the a2rl extra that provides it"
                        ) from exc
    return cls  # type: ignore[no-any-return]


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
