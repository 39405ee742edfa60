"""Each task is one package: the registry loads it by "package:Class", the contract is exported from
`a2rl.tasks`, and the audit reads a task's privileged-information patterns from the task class."""

from __future__ import annotations

import importlib
from importlib import resources
from typing import ClassVar

import pytest

import a2rl.tasks as tasks
from a2rl.analysis._audit import audit, privileged_patterns
from a2rl.tasks import BUILTIN_TASKS, ItemVerdict, StaticTextTask, Task


def _audit_code(task: str, code: dict[str, str]) -> list[str]:
    found = audit(task=task, code=code, transcript="", grader_log="", rejected_errors=[],
                  base_copies=[], data_texts={}, heldout=[])
    return [f.kind for f in found]


@pytest.mark.parametrize("name", sorted(BUILTIN_TASKS))
def test_builtin_task_is_a_package_exporting_its_class(name: str) -> None:
    module, cls_name = BUILTIN_TASKS[name].split(":")
    package = importlib.import_module(module)
    assert package.__file__ and package.__file__.endswith("__init__.py"), f"{name} is not a package"
    assert module == f"a2rl.tasks.{name}"
    cls = getattr(package, cls_name)
    assert issubclass(cls, Task) and cls.name == name


def test_task_author_api_is_exported() -> None:
    for symbol in ("Task", "StaticTextTask", "InteractiveTask", "TaskParams", "ItemVerdict",
                   "EvalOutcome", "GenerationSettings", "Episode", "Env", "StepResult",
                   "RolloutConfig", "distinct_questions", "ProgressCounter"):
        assert symbol in tasks.__all__ and hasattr(tasks, symbol), symbol


@pytest.mark.parametrize(("package", "resource"), [
    ("a2rl.tasks.alpacaeval", ("data", "offline_heldout.json")),
    ("a2rl.tasks.alpacaeval", ("prompts", "judge.txt")),
    ("a2rl.tasks.deepsearchqa", ("data", "questions.jsonl")),
    ("a2rl.tasks.deepsearchqa", ("prompts", "judge.txt")),
    ("a2rl.tasks.webshop", ("data", "items_shuffle.json")),
    ("a2rl.tasks.alfworld", ("prompts", "react.json")),
])
def test_task_files_live_in_the_task_folder(package: str, resource: tuple[str, ...]) -> None:
    assert resources.files(package).joinpath(*resource).is_file()


class Leaky(StaticTextTask):
    """A task whose agents must not read `secret_answers` (registered only in the test below)."""

    name = "leaky-demo"
    audit_patterns: ClassVar[tuple[str, ...]] = (r"\bsecret_answers\b",)

    def messages(self, item: dict[str, object]) -> list[dict[str, str]]:
        raise AssertionError("not evaluated")

    def score_completion(self, item: dict[str, object], completion: str) -> ItemVerdict:
        raise AssertionError("not evaluated")


def test_audit_reads_patterns_from_the_task_class(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BUILTIN_TASKS, "leaky-demo", f"{__name__}:Leaky")
    assert privileged_patterns("leaky-demo") == (r"\bsecret_answers\b",)
    assert "privileged-api" in _audit_code("leaky-demo", {"x.py": "print(secret_answers)\n"})
    assert "privileged-api" not in _audit_code("leaky-demo", {"x.py": "print(answers)\n"})
    # Another task's patterns do not apply to this one.
    assert "privileged-api" not in _audit_code("leaky-demo", {"x.py": "env.expert_plan\n"})
    assert "privileged-api" in _audit_code("alfworld", {"x.py": "env.expert_plan\n"})


def test_unknown_task_has_no_patterns_instead_of_failing_the_analysis() -> None:
    assert privileged_patterns("no-such-task") == ()
