"""Launchers for LLM coding CLIs (Claude Code, Codex, OpenCode, Gemini CLI, OpenHands).

A CLI agent is an `Agent` whose command runs a pinned, a2rl-installed CLI headless inside the
sandbox, through `a2rl.agents._cli_session` (which writes the CLI's config files into the
sandbox's private HOME, runs the CLI, and optionally re-prompts it while budget remains). Each
concrete launcher is one module that says:

- which package and version to install (`package`), and which credentials it reads;
- its headless command line (`cli_argv`), with tool permissions granted and the driver model;
- how to point it at a compatible endpoint (`base_url`), and which memory file it reads;
- how to turn its native event stream (the transcript) into `AgentEvent`s (`parse_events`).

The CLI's stdout/stderr are the run's transcript (outside the workspace); known secret values
are scrubbed from it as it is written, and from every record derived from it.
"""

from __future__ import annotations

import base64
import glob
import json
import os
import shutil
import subprocess
import sys
import uuid
from abc import abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from a2rl._errors import A2RLError
from a2rl._paths import cache_dir
from a2rl.agents._agent import Agent, AgentContext, AgentOption, DriverChoice
from a2rl.agents._events import AgentEvent, ParseReport, ParseResult
from a2rl.agents._stream import (
    PARSE_REPORT,
    PROMPT_FILE,
    finish_report,
    read_transcript,
    session_prompts,
    with_prompts,
    write_jsonl,
)

if TYPE_CHECKING:
    from a2rl.schema import RunConfig

SPEC_ENV = "A2RL_CLI_SESSION"
"""Environment variable that carries the session spec (JSON, base64) into the sandbox."""


@dataclass(frozen=True)
class CLIPackage:
    """A pinned CLI distribution. All pins live in the launcher modules' `package` attributes
    and are listed together by `a2rl agents list`."""

    manager: Literal["npm", "pip"]
    name: str
    version: str
    executable: str
    """Program name in node_modules/.bin (npm) or the venv's bin/ (pip)."""
    python: str | None = None
    """pip only: the Python minor version the CLI requires (its venv is built from that
    interpreter, found on the machine); None = a2rl's own Python."""

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}" if self.manager == "npm" else \
            f"{self.name}=={self.version}"


AGENTS_DIR_ENV = "A2RL_AGENTS_DIR"


def agents_root() -> Path:
    """Where `a2rl agents install` puts CLIs: $A2RL_AGENTS_DIR, else $A2RL_HOME/agents, holding
    <agent>-<version>/ folders."""
    if os.environ.get(AGENTS_DIR_ENV):
        path = Path(os.environ[AGENTS_DIR_ENV]).absolute()
        path.mkdir(parents=True, exist_ok=True)
        return path
    return cache_dir("agents")


def install_dir(agent: str, package: CLIPackage) -> Path:
    return agents_root() / f"{agent}-{package.version}"


def executable_path(agent: str, package: CLIPackage) -> Path:
    root = install_dir(agent, package)
    if package.manager == "npm":
        return root / "node_modules" / ".bin" / package.executable
    return root / "venv" / "bin" / package.executable


def is_installed(agent: str, package: CLIPackage) -> bool:
    return executable_path(agent, package).exists()


def install(agent: str, package: CLIPackage, *, force: bool = False) -> Path:
    """Install `package` into the a2rl cache (npm or a private venv); returns the executable."""
    root = install_dir(agent, package)
    exe = executable_path(agent, package)
    if exe.exists() and not force:
        return exe
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    if package.manager == "npm":
        npm = shutil.which("npm")
        if npm is None:
            raise A2RLError(f"{agent} is an npm package and npm is not installed",
                            "install Node.js 20+ with npm (Debian: apt-get install nodejs npm)")
        cmd = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(root), package.spec]
    else:
        python = find_python(package.python) if package.python else sys.executable
        if python is None:
            shutil.rmtree(root)
            raise A2RLError(f"{package.spec} needs Python {package.python}, and none was found",
                            f"install python{package.python} (e.g. `pyenv install "
                            f"{package.python}` or your distribution's package), then retry "
                            f"`a2rl agents install {agent}`")
        subprocess.run([python, "-m", "venv", str(root / "venv")], check=True)
        cmd = [str(root / "venv" / "bin" / "python"), "-m", "pip", "install", package.spec]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not exe.exists():
        shutil.rmtree(root, ignore_errors=True)
        tail = (done.stderr or done.stdout).strip()[-1500:]
        raise A2RLError(f"installing {package.spec} for {agent} failed:\n{tail}",
                        "check that the package registry is reachable, then retry "
                        f"`a2rl agents install {agent}`")
    return exe


def find_python(version: str) -> str | None:
    """A real (resolved, not a venv's) interpreter of this minor version: python<version> on
    PATH (pyenv shims included), pyenv's versions, /usr/local/bin, /usr/bin; None if none."""
    candidates = [shutil.which(f"python{version}")]
    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates += sorted(glob.glob(f"{pyenv}/versions/{version}*/bin/python{version}"),
                         reverse=True)
    candidates += [f"/usr/local/bin/python{version}", f"/usr/bin/python{version}"]
    for cand in candidates:
        if not cand or not os.path.exists(cand):
            continue
        done = subprocess.run([cand, "-c", "import os, sys; print(os.path.realpath(getattr("
                               "sys, '_base_executable', sys.executable))); "
                               "print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True)
        lines = done.stdout.split()
        if done.returncode == 0 and len(lines) == 2 and lines[1] == version:
            return lines[0]
    return None


@dataclass
class SessionSpec:
    """What `a2rl.agents._cli_session` does inside the sandbox (non-secret: it travels in an
    environment variable the agent can read)."""

    argv: list[str]
    """First invocation of the CLI."""
    resume_argv: list[str] | None = None
    """Invocation that continues the same conversation ("time remains, keep improving")."""
    home_files: dict[str, str] = field(default_factory=dict)
    """Files written under the sandbox's private HOME before the CLI starts (its config)."""
    reprompt: bool = False
    reserve_s: float = 300.0
    """Stop re-prompting when less than this remains on the grader's clock."""
    max_rounds: int = 50
    prompt_offset: int | None = None
    """Where the first prompt starts in argv's last element (after a `--prompt=`), so the
    session can note the prompt in the transcript without the spec carrying it twice; None
    when argv does not end with it."""

    def encode(self) -> str:
        return base64.b64encode(json.dumps(self.__dict__).encode()).decode()

    @classmethod
    def decode(cls, blob: str) -> SessionSpec:
        return cls(**json.loads(base64.b64decode(blob)))


REPROMPT = ("Time remains in your budget ({remaining}). Keep improving the model: check "
            "./timer.sh and your best score (GET $A2RL_GRADER_URL/status), then continue with "
            "the most promising next experiment and submit any better model.")


SWITCH = ("0", "1", "true", "false", "yes", "no", "on", "off")
"""The values of an on/off `--agent-opt`."""
CLI_OPTIONS = {
    "reprompt": AgentOption("1: re-prompt the CLI while budget remains", choices=SWITCH),
    "reserve_s": AgentOption("seconds before the budget's end when re-prompting stops", float)}
"""The `--agent-opt` keys of every CLI launcher; each extends them with its own."""


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


class CLIAgent(Agent):
    """Base class of the CLI launchers. Options (--agent-opt): reprompt=1 (keep the CLI going
    until the last minutes), reserve_s=<s>; see each launcher for more."""

    package: ClassVar[CLIPackage]
    agent_options = CLI_OPTIONS
    takes_driver = True
    credentials: ClassVar[tuple[str, ...]] = ()
    """Environment variables holding the driver's credentials; those that are set enter the
    sandbox (and no other secret does). At least one is needed unless a base URL is given."""
    memory_file: ClassVar[str | None] = None
    """The instructions file the CLI reads from its working directory (CLAUDE.md, AGENTS.md…)."""
    default_driver: ClassVar[str]
    """Driver model used when --driver is not given."""
    driver_pattern: ClassVar[str | None] = None
    """Driver model names this CLI's own provider API serves (a regular expression matched at
    the start, case-insensitive); None: any (a CLI that routes to many providers). Another
    model needs a compatible endpoint (--driver-base-url) that serves it."""

    # ---- to implement per CLI -------------------------------------------------------------
    @abstractmethod
    def cli_argv(self, ctx: AgentContext, exe: str, prompt: str, *, resume: bool) -> list[str]:
        """Headless command line: first run (resume=False) or continuation (resume=True)."""

    def cli_env(self, ctx: AgentContext) -> dict[str, str]:
        """Settings the CLI reads from the environment (base URL, telemetry off, …)."""
        return {}

    def home_files(self, ctx: AgentContext) -> dict[str, str]:
        """Config files under $HOME (relative paths) written inside the sandbox."""
        return {}

    @abstractmethod
    def parse_events(self, lines: Iterable[tuple[float, str]]) -> list[AgentEvent]:
        """Native transcript → normalised events; `lines` are (seconds since start, line)."""

    def parse_transcript(self, lines: Iterable[tuple[float, str]]) -> ParseResult:
        """The events plus a report on what could not be read (launchers whose parser counts
        unreadable lines override this; the default only counts the events)."""
        lines = list(lines)
        return finish_report(ParseReport(parser=self.name, lines=len(lines)),
                             self.parse_events(lines))

    # ---- shared ----------------------------------------------------------------------------
    @classmethod
    def driver_problem(cls, driver: str | None, base_url: str | None) -> str | None:
        """Why this CLI cannot speak to `driver` (None: it can). With a base URL the endpoint
        decides, so only the provider's own API is checked."""
        import re

        model = driver or cls.default_driver
        if base_url or cls.driver_pattern is None or re.match(cls.driver_pattern, model, re.I):
            return None
        return (f"{cls.name} speaks its provider's API only, which does not serve driver "
                f"{model!r} (it serves models matching {cls.driver_pattern!r})")

    def driver(self, ctx: DriverChoice) -> str:
        return ctx.driver or self.default_driver

    def setup_problems(self, config: RunConfig) -> list[A2RLError]:
        """Besides the options: the driver this CLI can speak to, the CLI installed at its
        pinned version, and the driver's credentials in the environment."""
        problems = super().setup_problems(config)
        incompatible = self.driver_problem(config.driver, config.driver_base_url)
        if incompatible:
            problems.append(A2RLError(incompatible, f"use a driver it serves (default "
                                      f"{self.default_driver}), or --driver-base-url of a "
                                      "compatible endpoint that serves that model"))
        for check in (self.executable, lambda: self.credential_values(config)):
            try:
                check()
            except A2RLError as exc:
                problems.append(exc)
        return problems

    def session_id(self, ctx: AgentContext) -> str:
        """A conversation id fixed by the run (workspace + grader), for CLIs that let the
        caller name the session (`--session-id`) and resume exactly it in re-prompt rounds."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"a2rl:{ctx.workspace.root}:{ctx.grader_url}"))

    def executable(self) -> Path:
        exe = executable_path(self.name, self.package)
        if not exe.exists():
            pinned = install_dir(self.name, self.package).name
            others = sorted(p.name for p in agents_root().glob(f"{self.name}-*")
                            if p.name != pinned and p.is_dir())
            raise A2RLError(f"the {self.name} CLI ({self.package.spec}) is not installed in "
                            f"{agents_root()}" + (f" (only other versions: {', '.join(others)})"
                                                  if others else ""),
                            f"run `a2rl agents install {self.name}`")
        return exe

    def sandbox_mounts(self) -> list[Path]:
        """Only the CLI's own install folder of the a2rl cache becomes visible (read-only)."""
        return [install_dir(self.name, self.package)]

    def credential_values(self, ctx: DriverChoice) -> dict[str, str]:
        found = {k: os.environ[k] for k in self.credentials if os.environ.get(k)}
        if not found and not ctx.driver_base_url:
            raise A2RLError(
                f"{self.name} needs one of {', '.join(self.credentials)} in the environment "
                "for its driver model",
                f"export {self.credentials[0]}=<key>, or point it at a compatible endpoint with "
                "--driver-base-url")
        return found

    def secrets(self, ctx: AgentContext) -> list[str]:
        return [v for v in self.credential_values(ctx).values() if len(v) >= 4]

    def prompt(self, ctx: AgentContext) -> str:
        """The first message: standing instructions, workspace facts and description.md."""
        description = (ctx.workspace.root / "description.md").read_text().strip()
        return (f"{self.standing_instructions(ctx)}\n\n# The task (description.md)\n\n"
                f"{description}\n\nStart now and work until the budget is spent.")

    def standing_instructions(self, ctx: AgentContext) -> str:
        ws = ctx.workspace.root
        return (ws / "instructions.md").read_text().strip() + "\n\n" + _workspace_facts(ctx)

    def prepare(self, ctx: AgentContext) -> None:
        """Write the CLI's memory file into the workspace (before the sandbox starts)."""
        if self.memory_file:
            path = ctx.workspace.root / self.memory_file
            path.write_text(self.standing_instructions(ctx) + "\n")

    def session_spec(self, ctx: AgentContext) -> SessionSpec:
        exe = str(self.executable())
        prompt = self.prompt(ctx)
        argv = self.cli_argv(ctx, exe, prompt, resume=False)
        return SessionSpec(argv=argv,
                           resume_argv=self.cli_argv(ctx, exe, REPROMPT, resume=True),
                           home_files=self.home_files(ctx),
                           reprompt=_truthy(ctx.options.get("reprompt")),
                           reserve_s=float(ctx.options.get("reserve_s", 300)),
                           prompt_offset=len(argv[-1]) - len(prompt)
                           if argv and argv[-1].endswith(prompt) else None)

    def command(self, ctx: AgentContext) -> list[str]:
        return [ctx.python, "-m", "a2rl.agents._cli_session"]

    def extra_env(self, ctx: AgentContext) -> dict[str, str]:
        env = dict(self.credential_values(ctx))
        env.update(self.cli_env(ctx))
        env[SPEC_ENV] = self.session_spec(ctx).encode()
        return env

    def describe(self, ctx: AgentContext) -> str:
        import shlex

        spec = self.session_spec(ctx)
        argv = [a if len(a) < 200 else a[:60] + f"…<{len(a)} chars>" for a in spec.argv]
        return shlex.join(argv) + ("  (re-prompted until the budget's end)" if spec.reprompt
                                   else "")

    def write_events(self, agent_dir: Path) -> int:
        """Parse agent/transcript.log into agent/events.jsonl (and what could not be read into
        agent/parse_report.json); returns the number of events. The first prompt, as the
        session noted it in the transcript, is written to agent/prompt.md (unless that
        exists)."""
        lines = list(read_transcript(agent_dir))
        prompt_file = agent_dir / PROMPT_FILE
        first = next((p for _, n, p in session_prompts(lines) if n == 0), None)
        if first is not None and not prompt_file.exists():
            prompt_file.write_text(first)
        parsed = self.parse_with_prompts(agent_dir, lines)
        write_jsonl(agent_dir / "events.jsonl", parsed.events)
        (agent_dir / PARSE_REPORT).write_text(parsed.report.model_dump_json(indent=2) + "\n")
        return len(parsed.events)

    def live_events(self, agent_dir: Path) -> list[AgentEvent] | None:
        """The transcript so far, parsed; its last line may be cut mid-write, which the
        parsers count as unreadable and skip."""
        return self.parse_with_prompts(agent_dir, list(read_transcript(agent_dir))).events

    def parse_with_prompts(self, agent_dir: Path, lines: list[tuple[float, str]]) -> ParseResult:
        """The transcript's events with the prompts the agent received in front of the turns
        they started (`a2rl.agents._stream.with_prompts`): the first one from agent/prompt.md
        when it exists, else from the session's note."""
        parsed = self.parse_transcript(lines)
        prompt_file = agent_dir / PROMPT_FILE
        first = prompt_file.read_text(errors="replace") if prompt_file.is_file() else None
        parsed.events = with_prompts(parsed.events, lines, first)
        parsed.report.events = len(parsed.events)
        return parsed


def _workspace_facts(ctx: AgentContext) -> str:
    gpus = sorted(Path("/dev").glob("nvidia[0-9]*"))
    return ("## Facts about this machine\n"
            f"- Working directory: `{ctx.workspace.root}`; task `{ctx.task}`, mode `{ctx.mode}`.\n"
            f"- Python with torch, transformers, trl, peft, datasets: `python` on PATH "
            f"({ctx.python}).\n"
            f"- Accelerators: {len(gpus)} NVIDIA GPU(s)" + ("" if gpus else " (CPU only)") +
            f"; {os.cpu_count()} CPU cores.\n"
            "- You work alone and unattended: never wait for a reply, never ask for "
            "permission.\n")
