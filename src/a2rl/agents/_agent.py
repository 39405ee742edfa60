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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from a2rl.workspace import Workspace

if TYPE_CHECKING:
    from a2rl.agents._events import AgentEvent

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
    budget_s: float
    task: str
    mode: str
    python: str
    """The interpreter with a2rl's training stack (the agent may use it or its own)."""
    options: dict[str, str] = field(default_factory=dict)
    """--agent-opt key=value pairs, interpreted by the agent launcher."""
    driver: str | None = None
    """--driver: the LLM that drives a CLI agent (its default when None)."""
    driver_base_url: str | None = None
    """--driver-base-url: a compatible endpoint instead of the provider's own."""
    network: str = "full"
    """The sandbox's network policy (allowlist | none | full); launchers turn off hosted tools
    that would bypass the egress proxy under allowlist and none."""
    graders: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Mode multi: task → (grader URL, token); each task folder's grader.env has them too."""


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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "import_names" not in cls.__dict__:
            program = getattr(getattr(cls, "package", None), "executable", None)
            if isinstance(program, str):
                cls.import_names = (program,)

    @abstractmethod
    def command(self, ctx: AgentContext) -> list[str]:
        """argv run inside the sandbox, with the workspace as working directory."""

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
            "A2RL_BUDGET_SECONDS": str(int(ctx.budget_s)),
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


class CommandAgent(Agent):
    """`--agent cmd:'<shell command>'`: any program, run with bash in the workspace."""

    name = "cmd"
    description = "any shell command (cmd:'./my_agent.sh')"

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
