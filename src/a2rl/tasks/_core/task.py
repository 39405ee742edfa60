"""The Task contract: what the agent may see, what stays held out, and how a model is scored."""

from __future__ import annotations

import inspect
import string
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo

from a2rl._errors import A2RLError
from a2rl._util import stable_hash
from a2rl.schema import TaskSpec
from a2rl.tasks._core.offline import Prediction

Level = Literal["L1", "L2", "L3"]
RewardKind = Literal["rule", "execution", "judge", "interactive"]


def secret_field(default: Any = None, **kwargs: Any) -> Any:
    """A task option that identifies the held-out set (a seed, a private file): the grader gets
    it, the workspace never does. Declare it as `heldout_seed: int | None = secret_field()` (or
    with `default_factory=`); the mark is on the field (and in the JSON schema as
    `"secret": true`), whatever its name."""
    if "default_factory" in kwargs:
        return Field(json_schema_extra={"secret": True}, **kwargs)
    return Field(default, json_schema_extra={"secret": True}, **kwargs)


def _is_secret(field: FieldInfo) -> bool:
    extra = field.json_schema_extra
    return isinstance(extra, dict) and extra.get("secret") is True


class TaskParams(BaseModel):
    """Per-task options. Subclasses add fields; all must be JSON-serialisable. Options that
    identify the held-out set are declared with `secret_field()`."""

    # use_attribute_docstrings: each option's docstring is its description (`a2rl tasks show`)
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    @model_validator(mode="after")
    def _seeds_not_negative(self) -> TaskParams:
        # numpy and torch refuse negative seeds deep inside data generation, after a run
        # folder exists: refuse them here, when the options are read.
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name.endswith("seed") and isinstance(value, int) and value < 0:
                raise ValueError(f"{name} must be 0 or more (got {value})")
        return self

    @classmethod
    def secret_fields(cls) -> frozenset[str]:
        """Names of the options marked secret (never written into a workspace)."""
        return frozenset(name for name, field in cls.model_fields.items() if _is_secret(field))

    def public(self) -> dict[str, Any]:
        """The options an agent may see (in data/task.json), secrets left out."""
        secret = self.secret_fields()
        return {k: v for k, v in self.model_dump(mode="json").items() if k not in secret}


def item_id(item: dict[str, Any], index: int) -> str:
    """A held-out item's id: its `id` (or `task_id`), else its position in the held-out list."""
    return str(item.get("id") or item.get("task_id") or index)


class EvalOutcome(BaseModel):
    """What one evaluation of one model produced. Only `score` reaches the agent."""

    score: float
    """Task score on a 0–100 scale (higher is better)."""
    n_items: int
    """Number of held-out items (or episodes) scored."""
    metrics: dict[str, float] = Field(default_factory=dict)
    """Secondary metrics (e.g. a strict and a flexible variant); never used for ranking."""
    details: list[dict[str, Any]] = Field(default_factory=list)
    """Per-item records (prompt, completion, verdict). Written outside the workspace only."""


class ProgressCounter:
    """Turns "n more units done" increments into on_progress(done, total) calls."""

    def __init__(self, total: int, on_progress: Callable[[int, int], None] | None) -> None:
        self.total, self.done, self.on_progress = total, 0, on_progress

    def __call__(self, n: int) -> None:
        self.done += n
        if self.on_progress:
            self.on_progress(self.done, self.total)


class Task(ABC):
    """A benchmark task. Subclass, set the class attributes, and register the class with
    `@tasks.register(name)` (in a folder under `a2rl/tasks/`, or from an `a2rl.tasks` entry
    point)."""

    name: ClassVar[str]
    level: ClassVar[Level]
    reward_kind: ClassVar[RewardKind]
    version: ClassVar[str]
    """Bump when data, prompt or scoring change: it invalidates cached baselines."""
    Params: ClassVar[type[TaskParams]] = TaskParams
    audit_patterns: ClassVar[tuple[str, ...]] = ()
    """Regexes (one line of the agent's code each) that reveal use of privileged information of
    this task (held-out answers, the environment's oracle); analysis reports a hit as critical."""

    def __init__(self, params: TaskParams | dict[str, Any] | None = None) -> None:
        self.params = params if isinstance(params, TaskParams) else self.Params(**(params or {}))

    def spec(self) -> TaskSpec:
        return TaskSpec(name=self.name, params=self.params.model_dump(mode="json"))

    @abstractmethod
    def write_train_data(self, data_dir: Path) -> list[Path]:
        """Write the train-visible data into `data_dir` (inside the workspace). Return the files."""

    @abstractmethod
    def heldout_items(self) -> list[dict[str, Any]]:
        """The held-out evaluation items. Never written into a workspace."""

    @abstractmethod
    def description(self, *, chat_preview: Callable[[list[dict[str, str]]], str] | None) -> str:
        """`description.md` for the agent: the task, the data, and the exact evaluation format.

        `chat_preview` renders messages with the base model's chat template so the agent sees the
        evaluation prompt exactly as the model will.
        """

    @abstractmethod
    def evaluate(self, model_dir: Path, *, chat_template_from: Path | None,
                 on_progress: Callable[[int, int], None] | None = None) -> EvalOutcome:
        """Score a checkpoint on the held-out items. Runs in a child process of the grader."""

    def item_ids(self) -> list[str]:
        """The ids predictions name held-out items by (`a2rl eval --predictions`): the item's
        `id` (or `task_id`), else its position."""
        return [item_id(item, i) for i, item in enumerate(self.heldout_items())]

    @abstractmethod
    def score_offline(self, predictions: Sequence[Prediction], *, allow_missing: bool = False,
                      on_progress: Callable[[int, int], None] | None = None) -> EvalOutcome:
        """Score given completions (a predictions file, or an earlier evaluation's records) with
        this task's scorer, exactly as `evaluate` scores generated ones."""

    # ---- what `a2rl certify` asks of a task (each optional: a task without them gets a
    # certificate that says which classes could not be tried and why) ----

    def gold_answer(self, item: dict[str, Any]) -> str | None:
        """The item's correct final answer as short text (a number, a name), from which the
        certificate builds answer-extraction attacks; None when the task has no such text."""
        return None

    def frame_answer(self, item: dict[str, Any], text: str) -> str:
        """A completion that gives `text` as the final answer, in the form the task's prompt
        asks for (an interactive task's answer action, for instance)."""
        return text

    def reference_completion(self, item: dict[str, Any]) -> str | None:
        """A correct completion for the item (the certificate's reference solution: the score
        the scorer gives a right answer); default: the gold answer, framed."""
        gold = self.gold_answer(item)
        return None if gold is None else self.frame_answer(item, gold)

    degenerate_actions: ClassVar[tuple[str, ...]] = ()
    """Interactive tasks: actions a degenerate policy repeats from the first step (buying at
    once, looking around forever); the certificate scores each."""

    def render_template(self, name: str = "description.md", /, **values: object) -> str:
        """A text file beside the task's module (its `description.md`, by default) with `$key` /
        `${key}` filled in from `values` (`$$` is a literal `$`; see string.Template). The text
        lives in a file a reader can open, the numbers and examples come from the task."""
        path = Path(inspect.getfile(type(self))).parent / name
        try:
            template = string.Template(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise A2RLError(f"task {self.name!r} has no template {path}: {exc.strerror}",
                            f"create {name} beside {Path(inspect.getfile(type(self))).name}") from exc
        try:
            return template.substitute({k: str(v) for k, v in values.items()})
        except KeyError as exc:
            raise A2RLError(f"template {path} uses ${exc.args[0]}, which the task does not fill in",
                            f"pass {exc.args[0]}=... to render_template, or write $$ for a "
                            "literal $") from exc
        except ValueError as exc:
            raise A2RLError(f"template {path} has a malformed placeholder: {exc}",
                            "write $name or ${name} for a value, $$ for a literal $") from exc

    def scorer(self) -> str:
        """What the score is, in words, for the description and the records (run.json): the
        reference implementation (and version) it reproduces, or that it is a2rl's own. Tasks
        that reproduce a reference scorer override this."""
        return f"a2rl's own {self.name} scorer (task version {self.version})"

    def fingerprint(self) -> str:
        """Identity of the evaluation (task version + params + held-out items) for cache keys."""
        return stable_hash({"task": self.name, "version": self.version,
                            "params": self.params.model_dump(mode="json"),
                            "items": stable_hash(self.heldout_items())})
