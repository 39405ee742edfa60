"""The sweep matrix (YAML): tasks × agents × drivers × modes × models × repeats, and its cells.

Every cell is one `a2rl run`. A cell's id is a hash of what makes its result (task and options,
agent and options, driver, mode, model, budget, grading options, study) plus its repeat index,
so editing resources or the backend keeps the finished cells, and adding repeats adds cells.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from a2rl._errors import A2RLError
from a2rl._util import stable_hash
from a2rl.schema import (
    Duration,
    RunConfig,
    TrackingConfig,
    matrix_key,
    option_problem,
    run_options,
)

Backend = Literal["local", "ray", "slurm"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Resources(_Strict):
    """What one cell needs from its machine."""

    gpus: float = Field(default=0, ge=0)
    """GPUs for the agent (Ray `num_gpus`, Slurm `--gpus-per-node`, local: devices handed out
    in turn; with `eval_gpus` the cell asks for both)."""
    eval_gpus: float = Field(default=0, ge=0)
    """GPUs for the grader's evaluations, apart from the agent's: the cell's devices are split,
    the first `gpus` visible to the agent, the next `eval_gpus` the run's `--eval-gpus`
    (0: evaluations share the agent's devices, as `a2rl run` does by default)."""
    cpus: float = Field(default=1, gt=0)
    """CPU cores (Ray `num_cpus`, Slurm `--cpus-per-task`)."""
    mem_gb: float | None = Field(default=None, gt=0)
    """Memory (Ray `memory`, Slurm `--mem`); None: the backend's default."""

    @property
    def devices(self) -> int:
        """Whole GPUs the cell asks its backend for (the agent's and the evaluations')."""
        import math

        return math.ceil(self.gpus) + math.ceil(self.eval_gpus)


class ResourcesPatch(_Strict):
    """Per-task/model/agent overrides of the matrix's `resources`."""

    gpus: float | None = Field(default=None, ge=0)
    """GPUs for the cell's agent."""
    eval_gpus: float | None = Field(default=None, ge=0)
    """GPUs for the cell's evaluations."""
    cpus: float | None = Field(default=None, gt=0)
    """CPU cores for the cell."""
    mem_gb: float | None = Field(default=None, gt=0)
    """Memory in GB for the cell."""


class TaskEntry(_Strict):
    """One task of the matrix (a plain name is the same as `{name: …}`)."""

    name: str
    """Registered task name (a2rl tasks)."""
    label: str | None = None
    """Label in tables (default: the name); tells two entries of one task apart."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Task options (like --task-opt), e.g. {source: offline, n_heldout: 50}."""
    budget: Duration | None = None
    """This task's agent budget (overrides the matrix's)."""
    resources: ResourcesPatch | None = None
    """This task's needs (override the matrix's)."""



class DriverEntry(_Strict):
    """The LLM endpoint/model driving a CLI agent."""

    name: str | None = None
    """Label in tables (default: the driver)."""
    driver: str | None = None
    """--driver (None: the agent's own default)."""
    base_url: str | None = None
    """--driver-base-url: a compatible endpoint instead of the provider's."""

    @property
    def label(self) -> str:
        return self.name or self.driver or "default"


class AgentEntry(_Strict):
    """One agent (scaffold) of the matrix (a plain string is the same as `{agent: …}`)."""

    name: str | None = None
    """Label in tables (default: the agent)."""
    agent: str
    """Agent name (a2rl agents) or `cmd:<shell command>`."""
    options: dict[str, str] = Field(default_factory=dict)
    """Agent options (like --agent-opt)."""
    drivers: list[DriverEntry] | None = None
    """Drivers for this agent (instead of the matrix's; `[{}]` = its default only)."""
    resources: ResourcesPatch | None = None
    """This agent's needs (override the task's)."""

    @field_validator("options", mode="before")
    @classmethod
    def _as_strings(cls, v: Any) -> Any:
        return {str(k): str(x) for k, x in v.items()} if isinstance(v, dict) else v

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        return "cmd" if self.agent.startswith("cmd:") else self.agent



class StackEntry(_Strict):
    """One agent + driver pair (a "stack", as the paper compares them), run as given instead
    of crossing every agent with every driver."""

    agent: AgentEntry
    """The agent (a name, `cmd:…`, or {name, agent, options, resources})."""
    driver: DriverEntry = Field(default_factory=lambda: DriverEntry())
    """Its driver (a model name, or {driver, base_url, name}; default: the agent's own)."""

    @field_validator("agent", mode="before")
    @classmethod
    def _agent(cls, v: Any) -> Any:
        return {"agent": v} if isinstance(v, str) else v

    @field_validator("driver", mode="before")
    @classmethod
    def _driver(cls, v: Any) -> Any:
        return {} if v is None else {"driver": v} if isinstance(v, str) else v

class ModelEntry(_Strict):
    """One base model (a plain string is the same as `{name: …}`)."""

    name: str
    """Embedded alias, local folder or hub id (like --model)."""
    budget: Duration | None = None
    """This model's agent budget (overrides the task's)."""
    resources: ResourcesPatch | None = None
    """This model's needs (override the task's)."""



class _RunOptionsBase(_Strict):
    """`a2rl run` options shared by every cell: every run option of the run config that is not
    a cell's own (task, agent, model, mode, budget, driver, …), made from its declaration, so a
    new run option is a sweep option. Durations are written as 12h, 30m, 90s or seconds and
    keyed without `_s` (`eval_timeout`)."""

    @field_validator("sandbox", check_fields=False)
    @classmethod
    def _registered_sandbox(cls, v: str) -> str:
        from a2rl.sandbox import sandboxes

        if v not in sandboxes:
            raise ValueError(f"unknown sandbox {v!r}; installed here: "
                             f"{', '.join(sandboxes.names())}")
        return v

    @field_validator("*")
    @classmethod
    def _new_run(cls, value: Any, info: ValidationInfo) -> Any:
        """The option's declared check (what a new run requires of it)."""
        name = _NAMES[str(info.field_name)]
        problem = option_problem(value, RUN_OPTIONS[name][1], label=_KEYS[name])
        if problem is not None:
            raise ValueError(f"{problem.message} ({problem.fix})")
        return value


RUN_OPTIONS = {name: declared for name, declared in run_options(RunConfig).items()
               if not declared[1].per_cell}
"""The run config's options a matrix's `run:` section sets, by field name."""
_KEYS = {name: matrix_key(name, option) for name, (_info, option) in RUN_OPTIONS.items()}
_NAMES = {key: name for name, key in _KEYS.items()}
# Fields every cell id has always covered; the others join a cell's id only when set.
_ID_RUN_FIELDS = frozenset({"sandbox", "network", "allow_hosts", "final", "test_fraction",
                            "eval_timeout", "grace", "max_submissions", "min_interval",
                            "keep_artifacts", "exec_trace"})


def _run_options_model() -> type[_RunOptionsBase]:
    """One field per run option: the run config's type and constraints; an option whose
    default the run config picks from the others (network) is None until set."""
    from pydantic import create_model

    fields: dict[str, Any] = {}
    for name, (info, option) in RUN_OPTIONS.items():
        if info.is_required():
            raise TypeError(f"RunConfig.{name} needs a default to be a sweep option")
        if option.default_text is not None and info.default is not None:
            fields[_KEYS[name]] = (info.annotation | None, None)  # type: ignore[operator]
        else:
            fields[_KEYS[name]] = (info.annotation, info)
    return create_model("RunOptions", __base__=_RunOptionsBase, __module__=__name__,
                        **fields)  # type: ignore[call-overload,no-any-return]


if TYPE_CHECKING:  # the fields are made at import: the checker reads each as the run config's
    class RunOptions(_RunOptionsBase):
        def __getattr__(self, name: str) -> Any: ...
else:
    RunOptions = _run_options_model()


def run_config_fields(options: _RunOptionsBase) -> dict[str, Any]:
    """The run-config fields a cell's `run:` options set (names as RunConfig spells them);
    an option left unset for the run config to pick is left out."""
    values = dict(options)
    return {name: values[key] for name, key in _KEYS.items()
            if key in values and not (values[key] is None
                                      and RUN_OPTIONS[name][1].default_text is not None
                                      and RUN_OPTIONS[name][0].default is not None)}


class RayOptions(_Strict):
    """Backend `ray`."""

    address: str | None = None
    """ray.init(address=…): `auto` or ray://host:10001 for a cluster; None: a local Ray."""
    num_cpus: int | None = Field(default=None, ge=1)
    """CPUs of a local Ray (None: all of this machine's)."""
    num_gpus: int | None = Field(default=None, ge=0)
    """GPUs of a local Ray (None: detected)."""
    runtime_env: dict[str, Any] | None = None
    """Ray runtime_env for the cell tasks (e.g. env_vars)."""


class SlurmOptions(_Strict):
    """Backend `slurm` (submitit, one job per cell)."""

    partition: str | None = None
    """--partition."""
    account: str | None = None
    """--account."""
    qos: str | None = None
    """--qos."""
    constraint: str | None = None
    """--constraint."""
    time: Duration | None = None
    """Job time limit (default: budget + 2 × eval timeout + 30 min)."""
    additional: dict[str, Any] = Field(default_factory=dict)
    """Other sbatch options (submitit's slurm_additional_parameters)."""
    setup: list[str] = Field(default_factory=list)
    """Shell lines run before each job (module load …, source venv/bin/activate)."""
    cluster: Literal["slurm", "local"] = "slurm"
    """`local`: the same jobs through submitit's local executor (tests, a single box)."""
    driver_time: Duration | None = None
    """Time limit of the sweep driver's own job (`a2rl sweep --as-job`; default 3 days).
    A driver that reaches it stops like a cancelled one: resubmitting resumes the sweep."""
    driver_cpus: int = Field(default=2, ge=1)
    """CPUs of the driver's job (it only submits and watches the cells' jobs)."""
    driver_mem_gb: float = Field(default=8.0, gt=0)
    """Memory of the driver's job."""



class Matrix(_Strict):
    """A sweep file (YAML). See examples/sweeps/."""

    name: str | None = None
    """Sweep name (default: the file's stem); the default directory is sweeps/<name>."""
    study: str | None = None
    """Study name: fixes the held-out seeds for every cell on every machine (default: the
    sweep's name). Created on first use."""
    study_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Task options fixed by the study when it is created (`task -> option -> value`)."""
    backend: Backend = "local"
    """Where cells run: local (a pool here), ray, slurm."""
    max_parallel: int | None = Field(default=None, ge=1)
    """Cells in flight at once (local default: 1; ray/slurm: all)."""
    max_attempts: int = Field(default=3, ge=1)
    """Attempts per cell before it is recorded as a harness failure."""
    repeats: int = Field(default=1, ge=1)
    """Runs per cell (independent repeats)."""
    tasks: list[TaskEntry] = Field(min_length=1)
    """Tasks (names or {name, options, budget, resources})."""
    agents: list[AgentEntry] = Field(default_factory=list)
    """Agents (names, cmd:…, or {name, agent, options, drivers, resources}), each crossed
    with `drivers` (or its own `drivers:`)."""
    drivers: list[DriverEntry] = Field(default_factory=lambda: [DriverEntry()])
    """Drivers for CLI agents (default: each agent's own)."""
    stacks: list[StackEntry] = Field(default_factory=list)
    """Agent + driver pairs run as listed (no cross product); with `agents` or alone."""
    modes: list[str] = Field(default_factory=lambda: ["free"])
    """Operating modes (free, sft-only, rl-oriented)."""
    scaffolds: list[str | None] = Field(default_factory=lambda: list[str | None]([None]))
    """Experience-driven scaffold settings, one per ablation arm: `none`/null (autonomous),
    or `--scaffold` component lists such as `journal`, `journal,skills` or `all`."""
    scaffold_options: dict[str, str] = Field(default_factory=dict)
    """`--scaffold-opt` pairs for every arm with a scaffold (llm_base_url, llm_model, ...)."""
    models: list[ModelEntry] = Field(default_factory=lambda: [ModelEntry(name="smollm2-135m")])
    """Base models."""
    budget: Duration = RunConfig.model_fields["budget_s"].default
    """Agent budget per cell (12h, 30m, …; default: `a2rl run`'s)."""
    resources: Resources = Field(default_factory=lambda: Resources())
    """What each cell needs (tasks, models, agents may override)."""
    run: RunOptions = Field(default_factory=lambda: RunOptions())
    """`a2rl run` options for every cell."""
    ray: RayOptions = Field(default_factory=lambda: RayOptions())
    """Backend ray."""
    slurm: SlurmOptions = Field(default_factory=lambda: SlurmOptions())
    """Backend slurm."""
    log: TrackingConfig | None = None
    """Log each finished run to W&B or MLflow."""


    @field_validator("tasks", "models", mode="before")
    @classmethod
    def _named(cls, v: Any) -> Any:
        return [{"name": x} if isinstance(x, str) else x for x in v] if isinstance(v, list) \
            else v

    @field_validator("agents", mode="before")
    @classmethod
    def _agents(cls, v: Any) -> Any:
        return [{"agent": x} if isinstance(x, str) else x for x in v] if isinstance(v, list) \
            else v

    @field_validator("drivers", mode="before")
    @classmethod
    def _drivers(cls, v: Any) -> Any:
        return [{} if x is None else {"driver": x} if isinstance(x, str) else x for x in v] \
            if isinstance(v, list) else v

    @field_validator("scaffolds")
    @classmethod
    def _scaffolds(cls, v: list[str | None]) -> list[str | None]:
        from a2rl.schema import parse_components

        out: list[str | None] = []
        for arm in v:
            if arm is None or arm.strip().lower() in ("", "none", "off"):
                out.append(None)
            else:  # canonical order, so `skills,journal` and `journal,skills` are one arm
                out.append(",".join(parse_components(arm)))
        if len(set(out)) != len(out):
            raise ValueError("the same scaffold arm is listed twice")
        return out

    @model_validator(mode="after")
    def _some_agent(self) -> Matrix:
        if not self.agents and not self.stacks:
            raise ValueError("the matrix lists no agent: give `agents:` (crossed with "
                             "`drivers:`) or `stacks:` (agent + driver pairs)")
        if any(s.agent.drivers is not None for s in self.stacks):
            raise ValueError("a stack's agent takes its driver from the stack: drop its "
                             "`drivers:`")
        return self

    def pairs(self) -> list[tuple[AgentEntry, DriverEntry]]:
        """Every (agent, driver) the matrix runs: each agent with its drivers, then the
        stacks as listed."""
        crossed = [(a, d) for a in self.agents
                   for d in (a.drivers if a.drivers is not None else self.drivers)]
        return crossed + [(s.agent, s.driver) for s in self.stacks]

    @field_validator("modes")
    @classmethod
    def _modes(cls, v: list[str]) -> list[str]:
        if "multi" in v:
            raise ValueError("mode multi runs several tasks in one run; a sweep runs one task "
                             "per cell (use free, sft-only or rl-oriented)")
        return v


class CellSpec(BaseModel):
    """One cell: everything its `a2rl run` needs."""

    model_config = ConfigDict(extra="forbid")
    task: str
    """Task name."""
    task_label: str
    """The task entry's label in tables."""
    task_options: dict[str, Any]
    """Task options (the study adds its seeds in the cell's process)."""
    agent: str
    """Agent name or cmd:…"""
    agent_label: str
    """The agent's label in tables."""
    agent_options: dict[str, str]
    """Agent options."""
    driver: str | None
    """--driver."""
    driver_base_url: str | None
    """--driver-base-url."""
    driver_label: str
    """The driver's label in tables."""
    mode: str
    """Operating mode."""
    model: str
    """Base model."""
    budget_s: float
    """Agent budget (seconds)."""
    run: RunOptions
    """Shared run options."""
    study: str
    """Study name."""
    repeat: int
    """Repeat index (0-based)."""
    scaffold: str | None = None
    """`--scaffold` components of this arm (None: the autonomous protocol)."""
    scaffold_options: dict[str, str] = Field(default_factory=dict)
    """`--scaffold-opt` pairs (only with a scaffold)."""
    resources: Resources
    """What the cell needs (not part of its id)."""

    @property
    def id(self) -> str:
        return cell_id(self)

    def baseline_group(self) -> str:
        """Cells that share one baseline: same task, options, model, study and grading."""
        return stable_hash({"task": self.task, "options": self.task_options,
                            "model": self.model, "study": self.study, "final": self.run.final,
                            "test_fraction": self.run.test_fraction})[:12]


def cell_id(spec: CellSpec) -> str:
    identity = spec.model_dump(mode="json", exclude={"resources", "agent_label",
                                                     "driver_label", "task_label"})
    defaults = RunOptions()
    identity["run"] = {k: v for k, v in identity["run"].items()
                       if k in _ID_RUN_FIELDS or getattr(spec.run, k) != getattr(defaults, k)}
    if spec.scaffold is None:  # autonomous cells keep the ids they had before the axis existed
        identity.pop("scaffold")
        identity.pop("scaffold_options")
    return stable_hash(identity)[:12]


def _patch(base: Resources, *patches: ResourcesPatch | None) -> Resources:
    data = base.model_dump()
    for p in patches:
        if p is not None:
            data.update({k: v for k, v in p.model_dump().items() if v is not None})
    return Resources(**data)


def expand(matrix: Matrix, study: str) -> list[CellSpec]:
    """Every cell, in a stable order (task, model, agent, driver, mode, repeat)."""
    cells: list[CellSpec] = []
    for task in matrix.tasks:
        for model in matrix.models:
            for agent, driver in matrix.pairs():
                _check_stack(agent, driver)
                for mode, scaffold in ((m, a) for m in matrix.modes
                                       for a in matrix.scaffolds):
                    for repeat in range(matrix.repeats):
                        cells.append(CellSpec(
                            scaffold=scaffold,
                            scaffold_options=dict(matrix.scaffold_options) if scaffold
                            else {},
                            task=task.name, task_label=task.label or task.name,
                            task_options=task.options, agent=agent.agent,
                            agent_label=agent.label, agent_options=agent.options,
                            driver=driver.driver, driver_base_url=driver.base_url,
                            driver_label=driver.label, mode=mode, model=model.name,
                            budget_s=model.budget or task.budget or matrix.budget,
                            run=matrix.run, study=study, repeat=repeat,
                            resources=_patch(matrix.resources, task.resources,
                                             model.resources, agent.resources)))
    if matrix.run.eval_gpus is not None \
            and any(c.resources.eval_gpus for c in cells):
        raise A2RLError("the matrix gives evaluation GPUs twice: run.eval_gpus (device ids) "
                        "and resources.eval_gpus (a count)",
                        "keep resources.eval_gpus on Ray and Slurm (the cell's devices are "
                        "split for it), or run.eval_gpus alone on one machine")
    ids = [c.id for c in cells]
    if len(set(ids)) != len(ids):
        raise A2RLError("the matrix lists the same cell twice (two equal entries)",
                        "remove the duplicate task, agent, driver, mode or model entry")
    return cells


def _check_stack(agent: AgentEntry, driver: DriverEntry) -> None:
    """Refuse an agent + driver pair (a "stack") whose CLI cannot speak to that driver, or
    whose agent runs on no driver (the driver would be ignored and mislabel its cells)."""
    from a2rl.agents import CLIAgent, get_agent

    instance = get_agent(agent.agent)
    if not instance.takes_driver and (driver.driver or (
            driver.base_url and not instance.reaches_endpoint)):
        raise A2RLError(f"agent {agent.label!r} runs on no driver LLM, but the matrix gives it "
                        f"driver {driver.label!r}",
                        f"give agent {agent.label!r} `drivers: [{{}}]` (no driver), or list "
                        "the CLI agents' pairs under `stacks:`")
    if not isinstance(instance, CLIAgent):
        return
    cls = type(instance)
    problem = cls.driver_problem(driver.driver, driver.base_url)
    if problem:
        raise A2RLError(f"agent {agent.label!r} with driver {driver.label!r}: {problem}",
                        f"give agent {agent.label!r} its own `drivers:` (e.g. "
                        f"[{{driver: {cls.default_driver}}}]), list the pair under `stacks:`, or "
                        "add a `base_url:` of a compatible endpoint that serves that model")


def _fields_of(model: type[BaseModel]) -> str:
    return ", ".join(model.model_fields)


def _where(loc: tuple[Any, ...]) -> tuple[str, type[BaseModel]]:
    """A readable key path (tasks[1].options) and the record that holds the last key."""
    owner: type[BaseModel] = Matrix
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts[-1:] = [f"{parts[-1]}[{item}]"] if parts else [f"[{item}]"]
            continue
        parts.append(str(item))
        field = owner.model_fields.get(str(item))
        if field is not None:
            inner = _record_type(field.annotation)
            if inner is not None:
                owner = inner
    return ".".join(parts) or "(top level)", owner


def _record_type(annotation: Any) -> type[BaseModel] | None:
    import typing

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _record_type(arg)
        if found is not None:
            return found
    return None


def parse_matrix(data: Any, source: str = "the matrix") -> Matrix:
    """Validate; every problem named by its key, with the fix."""
    if not isinstance(data, dict):
        raise A2RLError(f"{source} is not a mapping of keys (got {type(data).__name__})",
                        "write it as YAML keys: tasks:, agents:, models:, … "
                        "(see examples/sweeps/)")
    try:
        return Matrix.model_validate(data)
    except ValidationError as exc:
        problems, fixes = [], []
        for err in exc.errors():
            key, owner = _where(err["loc"])
            if err["type"] == "extra_forbidden":
                problems.append(f"unknown key {key}")
                fixes.append(f"valid keys there: {_fields_of(owner)}")
            elif err["type"] == "missing":
                problems.append(f"missing key {key}")
                fixes.append(f"add {key.rsplit('.', 1)[-1]}:")
            else:
                problems.append(f"{key}: {err['msg'].removeprefix('Value error, ')}")
        raise A2RLError(f"{source} is invalid: " + "; ".join(problems),
                        "; ".join(dict.fromkeys(fixes)) or "see examples/sweeps/ and "
                        "docs/cluster.md") from None


def load_matrix(path: Path) -> Matrix:
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise A2RLError(f"cannot read {path}: {exc}", "pass an existing sweep file") from exc
    except yaml.YAMLError as exc:
        raise A2RLError(f"{path} is not valid YAML: {exc}", "fix the YAML syntax") from exc
    matrix = parse_matrix(data, str(path))
    if matrix.name is None:
        matrix.name = path.stem
    if matrix.log is not None and matrix.log.group is None:  # the sweep's runs chart together
        matrix.log.group = matrix.name
    return matrix
