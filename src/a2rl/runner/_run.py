"""`a2rl run`: resolve → workspace → baseline → grader → agent (sandboxed, budgeted) → drain →
close, with the run extensions (`a2rl.extensions`) called at each step."""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from rich.console import Console

from a2rl._console import safe
from a2rl._errors import A2RLError
from a2rl._util import atomic_write_text
from a2rl.agents import Agent, CommandAgent, get_agent
from a2rl.capture import bounded_close
from a2rl.extensions import AgentLaunch, RunExtension, select
from a2rl.models import ResolvedModel, resolve_model
from a2rl.runner._agent_launch import (
    close_launch,
    drain,
    prepare_launch,
    print_notes,
    start_agent,
    supervise_agent,
)
from a2rl.runner._lifecycle import closing, kill_leftover_groups, terminate_on_signals
from a2rl.runner._part import TaskPart, live_progress, package_versions, run_flags
from a2rl.runner._precheck import (
    check_in_sandbox,
    check_mountable,
    check_port,
    check_writable_dir,
    plan_command,
)
from a2rl.runner._spend import check_cost_limit
from a2rl.sandbox import Limits, Sandbox, start_sandbox
from a2rl.schema import RunConfig, RunRecord
from a2rl.tasks import get_task
from a2rl.workspace import Workspace, build_multi_root, check_mode

__all__ = ["close_parts", "new_run_id", "package_versions", "run", "run_flags",
           "run_multi", "task_params_for"]


def new_run_id(agent: str) -> str:
    label = "cmd" if agent.startswith("cmd:") else agent
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{label}-{secrets.token_hex(2)}"


def task_params_for(task: str, params: dict[str, Any]) -> dict[str, Any]:
    """Mode multi: `--task-opt key=v` applies to every task, `--task-opt <task>.key=v` to
    that task only."""
    out = {k: v for k, v in params.items() if "." not in k}
    out.update({k.split(".", 1)[1]: v for k, v in params.items() if k.startswith(task + ".")})
    return out


def run(config: RunConfig, *, console: Console | None = None, echo_agent: bool = False,
        run_id: str | None = None, stop_file: Path | None = None) -> RunRecord:
    """One agent, one task (or, with mode `multi`, several tasks at once: see `run_multi`).
    SIGTERM/SIGHUP close the run like Ctrl-C (exit reason `terminated`); when `stop_file`
    exists by then, its operator stopped the run on purpose: status `stopped`, no failure."""
    with terminate_on_signals():
        return _pipeline(config, console=console, echo_agent=echo_agent, run_id=run_id,
                         stop_file=stop_file)[0]


def run_multi(config: RunConfig, *, console: Console | None = None, echo_agent: bool = False,
              run_id: str | None = None) -> list[RunRecord]:
    """Mode `multi`: one agent, several tasks at once, one budget. Each task gets its own
    workspace folder, grader and run record (runs/<task>/<run_id>/, listed like any run);
    the agent works in runs/multi/<run_id>/workspace/ that holds one folder per task, and its
    transcript lives in runs/multi/<run_id>/agent/ (linked from each task's run).
    SIGTERM/SIGHUP close every task's run like Ctrl-C."""
    with terminate_on_signals():
        return _pipeline(config, console=console, echo_agent=echo_agent, run_id=run_id)


def _pipeline(config: RunConfig, *, console: Console | None, echo_agent: bool,
              run_id: str | None, stop_file: Path | None = None) -> list[RunRecord]:
    """One run, every step in order; the extensions' hooks are called inside each step."""
    console = console or Console()
    started = time.monotonic()
    # resolve: everything cheap checked, and the model, before any run folder exists
    agent, sandbox, exts = _check_config(config)
    print_notes(agent, console)
    base = resolve_model(config.model)
    layout = _Layout(config, run_id or new_run_id(config.agent))
    parts = layout.create_parts(sandbox, console, base, exts)
    _headline(config, layout, sandbox, console)
    launch = AgentLaunch(config=config, agent=agent, sandbox=sandbox, parts=parts,
                         agent_dir=layout.agent_dir, console=console, extensions=exts)
    try:
        for part in parts:
            part.prepare_workspace(started)  # workspace, with the extensions' files
            part.score_baseline()  # baseline (not charged to the agent)
        ws = layout.agent_workspace(parts)
        try:
            with live_progress(console) as progress:
                for part in parts:
                    part.start_grader(progress)  # grader, with the extensions' routes
                ctx = prepare_launch(launch, ws)  # agent: command, environment, sandbox
                proc, agent_bar, t1 = start_agent(launch, ctx, progress, echo_agent)
                supervise_agent(launch, proc, progress, agent_bar, t1)
                drain(launch)  # drain: evaluations in flight run to their end
        finally:
            close_launch(launch)
        for part in parts:
            part.record.status = "finished"
    except BaseException as exc:
        on_purpose = stop_file is not None and stop_file.exists()
        for part in parts:
            part.fail(exc, on_purpose=on_purpose)
        raise
    finally:
        with closing():  # close: every record, under a deadline, then the extensions
            close_parts(parts, started, layout.run_dirs)
            _close_extensions(exts, console)
        layout.write_index(parts)
    return [part.record for part in parts]


def _close_extensions(exts: list[RunExtension], console: Console) -> None:
    for ext in exts:
        try:
            ext.close()
        except Exception as exc:  # noqa: BLE001 - every record is sealed already
            console.print(f"[yellow]{safe(ext.name)} failed at the close "
                          f"({type(exc).__name__}: {safe(exc)})[/]")


@runtime_checkable
class _LimitedSandbox(Protocol):
    """A backend that applies the agent's resource limits (`--agent-procs`, …)."""

    limits: Limits


def _check_config(config: RunConfig) -> tuple[Agent, Sandbox, list[RunExtension]]:
    """Everything cheap validated before any heavy step (the run folder, the model, the
    baseline): the options, the agent's setup (`Agent.check`), the sandbox and the task; the
    run's extensions."""
    config.check_new_run()
    check_mode(config.mode)
    active = select(config)
    for cls in active:
        cls.check(config)
    if config.mode == "multi" and len(config.tasks) < 2:
        raise A2RLError("--mode multi needs several tasks",
                        "pass them comma-separated, e.g. --task gsm8k,humaneval --mode multi")
    if config.mode != "multi" and config.tasks:
        raise A2RLError(f"several tasks ({', '.join(config.tasks)}) need --mode multi",
                        "add --mode multi, or run one task at a time")
    check_port(config.port)
    check_writable_dir(Path(config.runs_dir), "--runs-dir")
    agent = get_agent(config.agent)
    agent.check(config)  # its options, driver, CLI and credentials
    check_cost_limit(config, agent)
    plan = None
    if isinstance(agent, CommandAgent):
        plan = plan_command(agent.shell_command, agent_dirs=[Path(d) for d in config.agent_dirs],
                            cwd=Path.cwd(), runs_dir=Path(config.runs_dir))
        agent.shell_command, agent.mounts, agent.notes = plan.command, plan.mounts, plan.notes
    else:
        for d in config.agent_dirs:
            check_mountable(Path(d), Path(config.runs_dir), "--agent-dir")
    limits = Limits.from_options(config.agent_procs, config.agent_memory, config.agent_file_size)
    sandbox = start_sandbox(config.sandbox)  # fails here, before the baseline, if it cannot run
    if isinstance(sandbox, _LimitedSandbox):  # the backends that apply resource limits
        sandbox.limits = limits
    if plan is not None:  # the command as the agent's sandbox sees it, before the baseline
        check_in_sandbox(plan, sandbox)
    for name in config.tasks or [config.task]:
        get_task(name, task_params_for(name, config.task_params) if config.tasks
                 else config.task_params)
    return agent, sandbox, [cls(config) for cls in active]


class _Layout:
    """Where a run lives: one task in runs/<task>/<run_id>/; mode multi one such folder per
    task plus runs/multi/<run_id>/, the agent's workspace (a folder per task) and records."""

    def __init__(self, config: RunConfig, run_id: str) -> None:
        self.config, self.run_id = config, run_id
        self.root = Path(config.runs_dir) / "multi" / run_id if config.tasks else None
        self.parts: list[TaskPart] = []
        if self.root is not None:
            if self.root.exists():
                raise A2RLError(f"run directory {self.root} already exists", "use another run id")
            (self.root / "workspace").mkdir(parents=True)
            self.root.chmod(0o700)
            (self.root / "agent").mkdir()

    def create_parts(self, sandbox: Sandbox, console: Console, base: ResolvedModel,
                     exts: list[RunExtension]) -> list[TaskPart]:
        config, root = self.config, self.root
        if root is None:
            self.parts = [TaskPart(config, self.run_id, sandbox.sandboxed, console,
                                  extensions=exts, base=base)]
        else:
            self.parts = [TaskPart(config.model_copy(update={
                "task": name, "task_params": task_params_for(name, config.task_params)}),
                self.run_id, sandbox.sandboxed, console, extensions=exts, base=base,
                ws_root=root / "workspace" / name, agent_dir=root / "agent")
                for name in config.tasks]
        return self.parts

    @property
    def agent_dir(self) -> Path:
        return self.root / "agent" if self.root is not None else self.parts[0].agent_dir

    @property
    def run_dirs(self) -> list[Path]:
        return [*([self.root] if self.root is not None else []),
                *(part.run_dir for part in self.parts)]

    def agent_workspace(self, parts: list[TaskPart]) -> Workspace:
        if self.root is None:
            return parts[0].ws
        return build_multi_root(self.root / "workspace", self.config.tasks,
                                budget_s=self.config.agent_time_limit_s)

    def write_index(self, parts: list[TaskPart]) -> None:
        """Mode multi: multi.json, the run's tasks and their results."""
        if self.root is None:
            return
        atomic_write_text(self.root / "multi.json", json.dumps(
            {"run_id": self.run_id, "tasks": self.config.tasks,
             "runs": {p.task.name: str(p.run_dir) for p in parts},
             "best": {p.task.name: p.record.best.score if p.record.best else None
                      for p in parts},
             "baseline": {p.task.name: p.record.baseline.score if p.record.baseline else None
                          for p in parts}}, indent=1))


def _headline(config: RunConfig, layout: _Layout, sandbox: Sandbox, console: Console) -> None:
    what = f"tasks={','.join(config.tasks)}" if config.tasks else f"task={config.task}"
    console.print(f"[bold]a2rl run[/] {safe(layout.run_id)}  " + safe(
                  f"{what} agent={config.agent} model={config.model} "
                  f"mode={config.mode} budget={config.agent_time_limit_s:.0f}s sandbox={sandbox.kind} "
                  f"network={config.network}")
                  + ("" if sandbox.sandboxed else "  [bold red]UNSANDBOXED[/]")
                  + ("  [bold red]HOST NETWORK[/]" if config.network == "full" else ""))
    if layout.root is None:
        console.print(f"run directory: {safe(layout.parts[0].run_dir)}")


def close_parts(parts: list[TaskPart], started: float, run_dirs: list[Path]) -> None:
    """Close every part's record under a deadline (a recording.bounded_close): a stuck
    evaluation never keeps the harness from exiting, and SIGTERM during the close is obeyed."""
    if not parts:
        return
    config = parts[0].config
    hidden = config.final == "hidden"
    deadline = _CLOSE_S + (config.eval_timeout_s if hidden else 0.0)

    def work() -> None:
        for part in parts:
            part.close(started)
        # evaluation children in flight when a signal stopped the run
        kill_leftover_groups(run_dirs)

    def abandon(reason: str) -> None:
        kill_leftover_groups(run_dirs)
        for part in parts:
            part.abandon(reason)

    try:
        bounded_close(work, deadline_s=deadline, grace_s=_CLOSE_GRACE_S,
                      on_signal=lambda: kill_leftover_groups(run_dirs), on_abandon=abandon)
    except Exception:
        kill_leftover_groups(run_dirs)
        raise


_CLOSE_S = float(os.environ.get("A2RL_CLOSE_TIMEOUT", "300"))
"""Seconds closing a run may take (stopping the grader, the ledger, run.json) before it is
abandoned and run.json closed as it stands; the hidden final evaluation adds its timeout."""
_CLOSE_GRACE_S = 10.0
"""After a SIGTERM during the close: the evaluation children are killed at once, and the close
gets this long to finish before run.json is closed as it stands."""

