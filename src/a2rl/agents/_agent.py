"""The agent contract: a process started in the workspace, inside the sandbox, with env vars.

An agent gets: A2RL_GRADER_URL, A2RL_TOKEN, MODEL_PATH, DATA_PATH, OUTPUT_DIR, TASK,
A2RL_BUDGET_SECONDS, A2RL_MODE, A2RL_WORKSPACE (plus whatever its launcher adds, e.g. the API key
of a hosted driver). Its stdout/stderr become the run's transcript, outside the workspace. The
harness stops it at the budget. A CLI agent (Claude Code, Codex, …) is one more `Agent` subclass
that builds its command line; nothing in the grader changes.
"""

from __future__ import annotations

import os
import shlex
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from a2rl._errors import A2RLError
from a2rl.workspace import Workspace

if TYPE_CHECKING:
    from a2rl.agents._events import AgentEvent
    from a2rl.schema import RunConfig

# Variables a user may set for the agent's tools; everything else in the harness's
# environment (API keys of judges, the user's tokens) stays out of the sandbox.
PASSTHROUGH_ENV = ("LANG", "LC_ALL", "TZ", "OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                   "MKL_NUM_THREADS",
                   "CUDA_VISIBLE_DEVICES", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
                   "HF_ENDPOINT", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS",
                   "PIP_CONSTRAINT", "http_proxy", "https_proxy", "no_proxy")


@dataclass
class AgentContext:
    workspace: Workspace
    grader_url: str
    token: str
    config: RunConfig
    """The run's options: the agent's time limit, mode, --agent-opt, driver, network policy."""
    task: str
    """The task's name (mode multi: every task's, comma-separated)."""
    python: str
    """The interpreter with a2rl's training stack (the agent may use it or its own)."""
    graders: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Mode multi: task → (grader URL, token); each task folder's grader.env has them too."""

    @property
    def options(self) -> dict[str, str]:
        """--agent-opt key=value pairs, interpreted by the agent launcher."""
        return self.config.agent_options

    @property
    def mode(self) -> str:
        return self.config.mode

    @property
    def driver(self) -> str | None:
        """--driver: the LLM that drives a CLI agent (its default when None)."""
        return self.config.driver

    @property
    def driver_base_url(self) -> str | None:
        """--driver-base-url: a compatible endpoint instead of the provider's own."""
        return self.config.driver_base_url

    @property
    def network(self) -> str:
        """The sandbox's network policy (allowlist | none | full); launchers turn off hosted
        tools that would bypass the egress proxy under allowlist and none."""
        return self.config.network


class DriverChoice(Protocol):
    """The driver a run asks for: an `AgentContext` at launch, the `RunConfig` when checked."""

    @property
    def driver(self) -> str | None: ...

    @property
    def driver_base_url(self) -> str | None: ...


@dataclass(frozen=True)
class AgentOption:
    """One `--agent-opt` key an agent reads."""

    help: str
    kind: type[str] | type[int] | type[float] = str
    """The value must parse as this (a number is refused before the run, not inside it)."""
    choices: tuple[str, ...] = ()
    """The values it takes (empty: any)."""

    def problem(self, key: str, value: str) -> str | None:
        """Why `value` is not a value of this option (None: it is)."""
        if self.choices and value not in self.choices:
            return f"--agent-opt {key}={value!r} is not one of {', '.join(self.choices)}"
        try:
            self.kind(value)
        except ValueError:
            return f"--agent-opt {key}={value!r} is not " + (
                "an integer" if self.kind is int else "a number")
        return None


def one_error(agent: str, problems: list[A2RLError]) -> A2RLError:
    """Several problems of one agent's setup as one error: each named, each fix kept."""
    if len(problems) == 1:
        return problems[0]
    return A2RLError(f"agent {agent} cannot run here: " + "; ".join(p.message for p in problems),
                     "; ".join(p.fix for p in problems if p.fix))


class Agent(ABC):
    name: ClassVar[str]
    description: ClassVar[str] = ""
    api_hosts: ClassVar[tuple[str, ...]] = ()
    """Hosts its own API lives on: the default egress allow-list of a run with this agent
    (`--driver-base-url` adds that host, `--allow-host` more)."""
    import_names: ClassVar[tuple[str, ...]] = ()
    """Words that, in another harness's name for its agent (a results folder, its `--agent`),
    mean this agent: `a2rl import` reads that agent's transcript with this agent's parser
    first. Default: the program of its pinned CLI (`package.executable`), when it has one."""
    agent_options: ClassVar[Mapping[str, AgentOption] | None] = None
    """The `--agent-opt` keys it reads; any other key is refused before the run starts. None:
    not declared (a plug-in agent that reads its own), so not checked."""
    takes_driver: ClassVar[bool] = False
    """Whether `--driver` names the LLM it runs on (an agent that takes none refuses it)."""
    reaches_endpoint: ClassVar[bool] = False
    """Whether `--driver-base-url` means something to it without a driver: the endpoint the
    sandbox lets it reach (a `cmd:` agent calling an LLM it serves on this machine)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "import_names" not in cls.__dict__:
            program = getattr(getattr(cls, "package", None), "executable", None)
            if isinstance(program, str):
                cls.import_names = (program,)

    @abstractmethod
    def command(self, ctx: AgentContext) -> list[str]:
        """argv run inside the sandbox, with the workspace as working directory."""

    def check(self, config: RunConfig) -> None:
        """Everything this agent needs, checked with the run's other options before the run
        folder exists and before the baseline: raises one A2RLError naming every problem of
        `setup_problems` with its fix."""
        problems = self.setup_problems(config)
        if problems:
            raise one_error(self.name, problems)

    def setup_problems(self, config: RunConfig) -> list[A2RLError]:
        """What keeps this agent from running with `config` on this machine (empty: nothing).
        Here: its options and a driver it would ignore; CLI launchers add their CLI, the
        driver's compatibility and its credentials."""
        problems = []
        if self.agent_options is not None:
            problems += _option_problems(self.name, self.agent_options, config.agent_options)
        if not self.takes_driver:
            given = [flag for flag, value in (("--driver", config.driver),
                                              ("--driver-base-url", config.driver_base_url))
                     if value and not (flag == "--driver-base-url" and self.reaches_endpoint)]
            if given:
                problems.append(A2RLError(
                    f"agent {self.name} runs on no driver LLM, so {' and '.join(given)} would "
                    "be ignored (and mislabel the run's stack)",
                    f"drop {' and '.join(given)}" + (
                        "; a cmd: agent passes its model to its own command, and "
                        "--driver-base-url alone opens a loopback endpoint to it"
                        if self.reaches_endpoint else "")))
        return problems

    def extra_env(self, ctx: AgentContext) -> dict[str, str]:
        """Credentials or settings this agent needs (only these enter the sandbox)."""
        return {}

    def environment(self, ctx: AgentContext) -> dict[str, str]:
        ws = ctx.workspace
        env = {k: os.environ[k] for k in PASSTHROUGH_ENV if k in os.environ}
        env.update({
            "PATH": os.pathsep.join([str(Path(ctx.python).parent), "/usr/local/bin",
                                     "/usr/bin", "/bin"]),
            "HOME": "/tmp/home",
            "HF_HOME": "/tmp/home/.cache/huggingface",
            "PYTHONUNBUFFERED": "1",
            "A2RL_BUDGET_SECONDS": str(int(ctx.config.agent_time_limit_s)),
            "A2RL_MODE": ctx.mode,
            "A2RL_WORKSPACE": str(ws.root),
            "TASK": ctx.task,
        })
        if ctx.graders:  # multi: one grader per task folder (its grader.env says which)
            for task, (url, token) in ctx.graders.items():
                key = task.upper().replace("-", "_")
                env[f"A2RL_GRADER_URL_{key}"], env[f"A2RL_TOKEN_{key}"] = url, token
        else:
            env.update({"A2RL_GRADER_URL": ctx.grader_url, "A2RL_TOKEN": ctx.token,
                        "MODEL_PATH": str(ws.model_dir), "DATA_PATH": str(ws.data_dir),
                        "OUTPUT_DIR": str(ws.output_dir)})
        env.update(self.extra_env(ctx))
        return env

    def describe(self, ctx: AgentContext) -> str:
        return shlex.join(self.command(ctx))

    def prepare(self, ctx: AgentContext) -> None:
        """Called once before the agent starts (e.g. to write a CLI's memory file)."""
        return None

    def secrets(self, ctx: AgentContext) -> list[str]:
        """Secret values handed to the agent; scrubbed from everything the harness writes."""
        return []

    def sandbox_mounts(self) -> list[Path]:
        """Extra host folders the agent needs, mounted read-only (e.g. its CLI install)."""
        return []

    def write_events(self, agent_dir: Path) -> int:
        """Write agent/events.jsonl from the transcript, if this agent has a parser."""
        return 0

    def live_events(self, agent_dir: Path) -> list[AgentEvent] | None:
        """The events of the transcript written so far (while the agent runs), or None if
        this agent has no parser."""
        return None


def _option_problems(agent: str, known: Mapping[str, AgentOption],
                     given: Mapping[str, str]) -> list[A2RLError]:
    problems = []
    unknown = sorted(set(given) - set(known))
    if unknown:
        problems.append(A2RLError(
            f"agent {agent} has no option {', '.join(unknown)}",
            f"--agent-opt keys of {agent}: {', '.join(sorted(known))}" if known else
            f"drop --agent-opt (agent {agent} reads none; a command's flags go in the "
            "command)"))
    for key in sorted(set(given) & set(known)):
        opt = known[key]
        why = opt.problem(key, given[key])
        if why:
            value = "|".join(opt.choices) or {int: "integer", float: "number"}.get(opt.kind, "text")
            problems.append(A2RLError(f"agent {agent}: {why}",
                                      f"--agent-opt {key}=<{value}> ({opt.help})"))
    return problems


class CommandAgent(Agent):
    """`--agent cmd:'<shell command>'`: any program, run with bash in the workspace. It gets no
    `--agent-opt` (its flags belong in the command) and no driver model."""

    name = "cmd"
    description = "any shell command (cmd:'./my_agent.sh')"
    agent_options: ClassVar[Mapping[str, AgentOption] | None] = {}
    reaches_endpoint: ClassVar[bool] = True

    def __init__(self, shell_command: str) -> None:
        self.shell_command = shell_command
        self.mounts: list[Path] = []
        """Host paths mounted read-only (the named script's folder; set by the run's checks)."""
        self.notes: list[str] = []
        """What the run's checks want the user to know (printed before the run)."""

    def command(self, ctx: AgentContext) -> list[str]:
        return ["bash", "-c", self.shell_command]

    def sandbox_mounts(self) -> list[Path]:
        return list(self.mounts)
