"""Each task is one package: the registry loads it by "package:Class", the contract is exported from
`a2rl.tasks`, and the audit reads a task's privileged-information patterns from the task class."""

from __future__ import annotations

import importlib
import json
from importlib import resources
from pathlib import Path
from typing import ClassVar

import pytest

import a2rl.envs as envs
import a2rl.inference as inference
import a2rl.tasks as tasks
from a2rl.analysis._audit import audit, privileged_patterns
from a2rl.tasks import BUILTIN_TASKS, ItemVerdict, StaticTextTask, Task, TaskParams, secret_field


def _audit_code(task: str, code: dict[str, str]) -> list[str]:
    found = audit(task=task, code=code, transcript="", grader_log="", rejected_errors=[],
                  base_copies=[], data_texts={}, heldout=[])
    return [f.kind for f in found]


@pytest.mark.parametrize("name", sorted(BUILTIN_TASKS))
def test_builtin_task_is_a_package_exporting_its_class(name: str) -> None:
    from a2rl.tasks._core.registry import task_class as get_task_class

    module = BUILTIN_TASKS[name].partition(":")[0]
    package = importlib.import_module(module)
    assert package.__file__ and package.__file__.endswith("__init__.py"), f"{name} is not a package"
    assert module == f"a2rl.tasks.{name}"
    cls = get_task_class(name)
    assert getattr(package, cls.__name__) is cls
    assert issubclass(cls, Task) and cls.name == name


def test_task_author_api_is_exported_once() -> None:
    # what a task author writes against: the task contract from a2rl.tasks, an interactive
    # task's environment types from a2rl.envs, generation settings from a2rl.inference; each
    # name from the one package that defines it
    homes = {tasks: ("Task", "StaticTextTask", "InteractiveTask", "TaskParams", "ItemVerdict",
                     "EvalOutcome", "distinct_questions", "ProgressCounter", "secret_field",
                     "installation_seed"),
             envs: ("Episode", "Env", "StepResult", "RolloutConfig"),
             inference: ("GenerationSettings",)}
    for package, symbols in homes.items():
        for symbol in symbols:
            assert symbol in package.__all__ and hasattr(package, symbol), symbol
            others = [p.__name__ for p in homes if p is not package and symbol in p.__all__]
            assert others == [], (symbol, others)


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


# ---- the worked example: a static task is one folder of at most 80 lines ---------------------

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "examples" / "tasks" / "reverse"


@pytest.fixture
def reverse_task(monkeypatch: pytest.MonkeyPatch) -> type[Task]:
    """The README's example folder, registered with its one line."""
    monkeypatch.syspath_prepend(str(EXAMPLE.parent))
    monkeypatch.setitem(BUILTIN_TASKS, "reverse", "reverse:ReverseTask")
    return tasks.task_class("reverse")


def test_example_task_folder_is_small() -> None:
    files = sorted(p for p in EXAMPLE.iterdir() if p.is_file())
    assert [p.name for p in files] == ["__init__.py", "description.md", "task.py"]
    # 80 lines of task, the three lines that give `a2rl certify` the gold answer and the two of
    # its registration
    assert sum(len(p.read_text().splitlines()) for p in files) <= 86


def test_example_task_end_to_end(reverse_task: type[Task], tiny_model: Path, tmp_path: Path) -> None:
    task = tasks.get_task("reverse", {"n_train": 50, "n_heldout": 3})
    assert isinstance(task, StaticTextTask) and task.params.heldout_seed is not None
    assert "heldout_seed" not in task.params.public()
    text = task.description(chat_preview=None)
    assert "50 items" in text and "Spell" in text and "/ 3." in text and "$" not in text
    (path,) = task.write_train_data(tmp_path / "data")
    train = [json.loads(line) for line in path.read_text().splitlines()]
    assert {r["word"] for r in train}.isdisjoint(i["word"] for i in task.heldout_items())
    item = task.heldout_items()[0]
    assert task.score_completion(item, f" `{item['answer']}`.\n").score == 1.0
    assert task.score_completion(item, item["word"]).score == 0.0
    outcome = task.evaluate(tiny_model, chat_template_from=tiny_model)
    assert outcome.n_items == 3 and len(outcome.details) == 3 and 0.0 <= outcome.score <= 100.0


# ---- one generate-then-score loop --------------------------------------------------------------

class _FailingEngine:
    def __init__(self) -> None:
        self.closed = False

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str:
        return messages[-1]["content"]

    def generate(self, prompts: list[str], settings: object, progress: object = None) -> list[str]:
        raise RuntimeError("generation failed")

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("name", ["arith", "humaneval"])
def test_engine_is_closed_when_generation_fails(name: str, monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    import a2rl.inference

    engine = _FailingEngine()
    monkeypatch.setattr(a2rl.inference, "load_engine", lambda *a, **k: engine)
    task = tasks.get_task(name, {"n_heldout": 2} if name == "arith" else {"max_heldout": 2})
    with pytest.raises(RuntimeError, match="generation failed"):
        task.evaluate(tmp_path, chat_template_from=None)
    assert engine.closed


def test_static_tasks_share_the_loop() -> None:
    for name in ("arith", "gsm8k", "humaneval", "alpacaeval"):
        cls = tasks.task_class(name)
        assert issubclass(cls, StaticTextTask) and "evaluate" not in cls.__dict__, name


def test_scoring_is_checked_before_the_model_loads(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    import a2rl.inference
    from a2rl._errors import A2RLError

    for var in ("A2RL_JUDGE_BASE_URL", "A2RL_JUDGE_MODEL", "A2RL_JUDGE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    loaded: list[Path] = []
    monkeypatch.setattr(a2rl.inference, "load_engine", lambda path, **k: loaded.append(path))
    with pytest.raises(A2RLError, match="judge"):
        tasks.get_task("alpacaeval", {"source": "offline"}).evaluate(tmp_path, chat_template_from=None)
    assert loaded == []


# ---- secret options are marked on the field -----------------------------------------------------

class _Params(TaskParams):
    private_file: str = secret_field("/secret/items.jsonl")
    """A secret option whatever its name."""
    heldout_seed: int = 3
    """Not marked, so public (the name alone means nothing)."""


def test_secret_options_are_marked_not_named() -> None:
    p = _Params()
    assert _Params.secret_fields() == {"private_file"}
    assert p.public() == {"heldout_seed": 3}
    assert _Params.model_json_schema()["properties"]["private_file"]["secret"] is True
    for name in BUILTIN_TASKS:
        params = tasks.task_class(name).Params
        if "heldout_seed" in params.model_fields:
            assert "heldout_seed" in params.secret_fields(), name


# ---- descriptions are templates beside the task -------------------------------------------------

def test_template_errors_name_the_placeholder(reverse_task: type[Task]) -> None:
    from a2rl._errors import A2RLError

    task = tasks.get_task("reverse")
    with pytest.raises(A2RLError, match=r"uses \$prompt"):
        task.render_template(n_train=1, n_heldout=1)
    with pytest.raises(A2RLError, match="no template"):
        task.render_template("missing.md")
    for name in ("arith", "alfworld"):
        assert (Path(importlib.import_module(f"a2rl.tasks.{name}").__file__ or "").parent
                / "description.md").is_file()
