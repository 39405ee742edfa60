"""The run-extension protocol: what a capability adds to `a2rl run`, as hooks the runner calls
at fixed points of its pipeline (resolve → workspace → baseline → grader → agent → drain →
close). Every hook has a no-op default, so an extension implements only the ones it needs.

In the order the runner calls them:

- `enabled(config)`, `check(config)`: class methods, before any run folder exists. `check`
  refuses a configuration the extension cannot serve (an `A2RLError` naming the fix).
- `prepare_workspace(part)`: the task's workspace is built; write files into it and return
  paths the sandbox mounts read-only.
- `setup_done(part)`: the part's record holds the model, the task and the setup time; the
  baseline comes next.
- `baseline_scored(part, baseline)`.
- `grader_created(part, grader)`, then `grader_routes(part)`: FastAPI routers the grader's
  server mounts behind its bearer token. They are matched before the grader's own routes, so
  an extension may also replace one of those (with the same request format).
- `agent_environment(launch)`: the agent's command, environment and mounts are known; change
  them (`launch.env`, `launch.read_only`, `launch.bridge`, `launch.trace_syscalls`).
- `wrap_command(launch)`: `launch.argv` is the sandbox's command line, run by the harness; an
  extension may wrap it (a tracer outside the sandbox).
- `agent_starting(part, launch)`: before the budget's clock starts; record fields set here are
  saved with the record of the agent's start. `agent_started(part, launch)`: the clock runs and
  `launch.started_epoch` is the agent's start.
- `submission_received(part, record)`, `submission_finished(part, record, best)`: from the
  grader's threads while the agent works; a hook that raises is logged and skipped.
- `agent_exited(launch)`: the agent's processes are gone (on every path, a signal included).
- `submissions_closed(part)`: the grader takes no more submissions (the agent exited or its
  budget ended; not when a signal stopped the harness).
- `launch_closed(launch)`: after the drain, on every path: release what the launch held.
- `grader_closed(part)`: the part's grader is closed (the ledger is final); inside the close's
  error handling, so a failure here marks the run failed.
- `analyze(part)`: the part's run.json is sealed; the extension that writes the run-level
  analysis returns it (the first one returned is the run's). `analysis_written(part,
  analysis)`: it is written (analysis.json, summary.md); add to it.
- `run_closing(part)`: last of the part; diagnostics that read the closed run (tracking).
- `close()`: once, after every part of the run is closed.

`add_to_analysis(run_dir, record, analysis)` (a class method) adds the extension's part to the
analysis of a recorded run that `a2rl analyze` or an import rewrote
(`a2rl.extensions.add_to_analysis`); `report_sections(run_dir, record)` (a class method) is read
by reports of a finished run (`a2rl.extensions.report_sections`); `submit_flags` declares
/submit fields an extension's own /submit route reads, so that a run without it refuses them
as before.

One instance serves one run, that is one agent; a `multi` run has several task parts (each
its own run folder, grader and record), so part hooks get the part they concern.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from fastapi import APIRouter
    from rich.console import Console

    from a2rl.agents import Agent
    from a2rl.grader import Grader, GraderServer
    from a2rl.sandbox import HostBridge, Sandbox
    from a2rl.schema import BaselineRecord, RunAnalysis, RunConfig, RunRecord, SubmissionRecord
    from a2rl.tasks import Task


class TaskPart(Protocol):
    """One task's share of a run, as extensions see it (the runner's task run)."""

    config: RunConfig
    """The part's configuration (in a `multi` run: its own task and task options)."""
    task: Task
    run_dir: Path
    """runs/<task>/<run_id>/: the records, outside the workspace."""
    record: RunRecord
    """The part's run.json as it stands; `save()` writes it."""
    console: Console
    grader: Grader | None
    """None until `grader_created`."""
    server: GraderServer | None
    """The grader's HTTP server (its port): None until the grader serves."""
    extensions: Sequence[RunExtension]
    """Every active extension of the run, in hook order."""
    read_only: list[Path]
    """Host paths the extensions' `prepare_workspace` returned (mounted read-only)."""

    @property
    def workspace(self) -> Path:
        """The task's workspace folder (the agent's, in a `multi` run one folder of it)."""

    def save(self) -> None:
        """Write the record as it stands to run.json."""


@dataclass
class AgentLaunch:
    """The agent's start: what the sandbox runs and with what, filled in as the launch goes."""

    config: RunConfig
    """The run's configuration."""
    agent: Agent
    sandbox: Sandbox
    parts: Sequence[TaskPart]
    """Every task part the agent serves (one, or several in a `multi` run)."""
    agent_dir: Path
    """The agent's records (transcript, events), outside the workspace."""
    console: Console
    extensions: Sequence[RunExtension] = ()
    """The run's active extensions, in hook order."""
    argv: list[str] = field(default_factory=list)
    """The agent's command; after the sandbox's wrap, the command line the harness runs."""
    env: dict[str, str] = field(default_factory=dict)
    """The agent's environment."""
    read_only: list[Path] = field(default_factory=list)
    """Host paths the sandbox mounts read-only."""
    secrets: list[str] = field(default_factory=list)
    """Values scrubbed from every record of the agent's output."""
    bridge: HostBridge | None = None
    """The relay of host ports into the sandbox's own network namespace (None: none)."""
    trace_syscalls: list[str] = field(default_factory=list)
    """Syscalls an exec tracer records besides execve."""
    trace_hide: list[list[str]] = field(default_factory=list)
    """Command-line prefixes of the sandbox's own programs, which an exec trace leaves out."""
    started_epoch: float | None = None
    """When the agent started (epoch seconds), from `agent_started` on."""


@dataclass(frozen=True)
class ReportSection:
    """A section an extension adds to a run's report."""

    title: str
    markdown: str


class RunExtension:
    """A capability of `a2rl run`; subclass it, override the hooks needed, and register the
    class (`@extensions.register(name)` with `name` equal to its `name`, or an entry point of
    the `a2rl.extensions` group)."""

    name: ClassVar[str] = ""
    """The registered name; also its key in `RunConfig.extensions`."""
    hook_order: ClassVar[int] = 100
    """Where the hooks of a built-in extension run among the built-ins' (ascending, then by
    name); third-party extensions run after every built-in, in the order of
    `RunConfig.extensions`."""
    enabled_by_name: ClassVar[bool] = True
    """Turned on by naming it in `RunConfig.extensions` (`--extension NAME`). False for one that
    a run option of its own turns on (or that is always on): naming it there is refused."""
    submit_flags: ClassVar[Mapping[str, str]] = {}
    """Boolean fields of the /submit body that this extension's own /submit route reads, each
    with the grader's reply (422) to a true value in a run where the extension is off."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        # this extension's entry of `RunConfig.extensions` (empty when it has none)
        self.options: dict[str, Any] = dict(config.extensions.get(self.name, {}))

    # -- before the run folder ----------------------------------------------------------------
    @classmethod
    def enabled(cls, config: RunConfig) -> bool:
        """Whether the run uses this extension (by default: `RunConfig.extensions` names it)."""
        return cls.name in config.extensions

    @classmethod
    def check(cls, config: RunConfig) -> None:
        """Refuse, with the fix, a configuration this extension cannot serve."""

    # -- workspace and baseline ---------------------------------------------------------------
    def prepare_workspace(self, part: TaskPart) -> Sequence[Path]:
        """Files for the agent; returns host paths to mount read-only."""
        return ()

    def setup_done(self, part: TaskPart) -> None:
        """The part's record holds model, task and setup time; the baseline is next."""

    def baseline_scored(self, part: TaskPart, baseline: BaselineRecord) -> None:
        """The part's baseline is scored (or read from the cache)."""

    # -- the grader ---------------------------------------------------------------------------
    def grader_created(self, part: TaskPart, grader: Grader) -> None:
        """The part's grader exists; its server does not serve yet."""

    def grader_routes(self, part: TaskPart) -> Sequence[APIRouter]:
        """Routers the part's grader server mounts (behind its bearer token)."""
        return ()

    # -- the agent ----------------------------------------------------------------------------
    def agent_environment(self, launch: AgentLaunch) -> None:
        """Change the agent's environment, mounts, network bridge or traced syscalls."""

    def wrap_command(self, launch: AgentLaunch) -> None:
        """Wrap `launch.argv`, the sandbox's command line (run outside the sandbox)."""

    def agent_starting(self, part: TaskPart, launch: AgentLaunch) -> None:
        """Before the clock starts: set record fields (saved with the agent's start)."""

    def agent_started(self, part: TaskPart, launch: AgentLaunch) -> None:
        """The clock runs; `launch.started_epoch` is set."""

    def submission_received(self, part: TaskPart, record: SubmissionRecord) -> None:
        """A submission arrived (grader thread)."""

    def submission_finished(self, part: TaskPart, record: SubmissionRecord,
                            best: float | None) -> None:
        """A submission reached its final status: scored, or failed or rejected (grader
        thread); `best` is the best score so far."""

    def agent_exited(self, launch: AgentLaunch) -> None:
        """The agent's processes are gone (every path)."""

    def submissions_closed(self, part: TaskPart) -> None:
        """The grader takes no more submissions (not reached when a signal stopped the run)."""

    def launch_closed(self, launch: AgentLaunch) -> None:
        """After the drain, on every path: release what the launch held."""

    # -- the close ----------------------------------------------------------------------------
    def grader_closed(self, part: TaskPart) -> None:
        """The part's grader is closed; the ledger is final."""

    def analyze(self, part: TaskPart) -> RunAnalysis | None:
        """The part's run.json is sealed: write the run-level analysis and return it (None:
        this extension writes none, or it failed and said so)."""
        return None

    def analysis_written(self, part: TaskPart, analysis: RunAnalysis) -> None:
        """The part's run-level analysis is written (analysis.json, summary.md)."""

    def run_closing(self, part: TaskPart) -> None:
        """The part's run is closed and analyzed."""

    def close(self) -> None:
        """Every part of the run is closed."""

    # -- reading a finished run ---------------------------------------------------------------
    @classmethod
    def add_to_analysis(cls, run_dir: Path, record: RunRecord, analysis: RunAnalysis) -> None:
        """A recorded run's analysis was (re)written by `a2rl analyze` or an import: write this
        extension's own part of it (a live run reaches `analysis_written` instead)."""

    @classmethod
    def report_sections(cls, run_dir: Path, record: RunRecord) -> list[ReportSection]:
        """Sections for the report of a run this extension took part in."""
        return []
