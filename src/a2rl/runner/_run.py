"""`a2rl run`: workspace → baseline → grader → agent (sandboxed, budgeted) → ledger → run.json."""

from __future__ import annotations

import json
import os
import platform
import secrets
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from a2rl._errors import A2RLError
from a2rl._report_console import plain_text, progress_for, safe
from a2rl._secrets import scrub
from a2rl._util import atomic_write_text, utcnow
from a2rl.agents import Agent, AgentContext, get_agent
from a2rl.agents._agent import CommandAgent
from a2rl.grader import (
    Grader,
    GraderConfig,
    GraderServer,
    SubmissionRecord,
    public_fingerprint,
    redacted_params,
    score_baseline,
)
from a2rl.grader._secret import redacted_spec, secret_fields
from a2rl.models import ResolvedModel, resolve_model
from a2rl.recording import RunRecorder, parse_exec_log, strace_available, traced_command
from a2rl.recording._closing import RecordSlot, bounded_close, storage_failure
from a2rl.runner._lifecycle import (
    SANDBOX_FILE,
    closing,
    kill_leftover_groups,
    process_proof,
    terminate_on_signals,
)
from a2rl.runner._precheck import (
    check_in_sandbox,
    check_limits,
    check_mountable,
    early_exit_hint,
    plan_command,
)
from a2rl.runner._records import ModelInfo, RunConfig, RunRecord, TaskInfo
from a2rl.runner._supervise import AgentProcess, HarnessTerminated
from a2rl.sandbox import (
    EgressProxy,
    HostBridge,
    Sandbox,
    default_allow_list,
    sandbox_masks,
    start_sandbox,
    task_mask_hooks,
)
from a2rl.sandbox._bridge import BRIDGE_CODE
from a2rl.tasks import Task, get_task, list_tasks
from a2rl.workspace import (
    GRADER_ENV,
    READ_ONLY_ENTRIES,
    GradingProtocol,
    Workspace,
    build_multi_root,
    build_workspace,
    check_mode,
    write_grader_envs,
)
from a2rl.workspace._machine import NetworkFacts

if TYPE_CHECKING:  # analysis reads run records, so it is imported lazily
    from a2rl.analysis import LiveSummary
    from a2rl.tracking import LiveTracker

_VERSIONED = ("a2rl-bench", "torch", "transformers", "trl", "accelerate", "datasets", "reasoning-gym",
              "fastapi", "uvicorn", "pydantic", "vllm")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in _VERSIONED:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out


def new_run_id(agent: str) -> str:
    label = "cmd" if agent.startswith("cmd:") else agent
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{label}-{secrets.token_hex(2)}"


def _progress(console: Console) -> Progress:
    # not a terminal (a Slurm log): periodic plain lines instead of a bar nobody sees
    return progress_for(console, TextColumn("[progress.description]{task.description}"),
                        BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TimeRemainingColumn(), transient=True,
                        every_s=_progress_every())


def _progress_every() -> float:
    """Seconds between progress lines off a terminal ($A2RL_PROGRESS_EVERY, default 30)."""
    try:
        return max(0.0, float(os.environ.get("A2RL_PROGRESS_EVERY", "30")))
    except ValueError:
        return 30.0


class _RunEvents:
    """Shows submissions and evaluation progress while the agent works, and snapshots the
    agent's code and models at each submission."""

    def __init__(self, progress: Progress, summary: LiveSummary) -> None:
        self.progress = progress
        self.summary = summary
        self.recorder: RunRecorder | None = None
        self.tracker: LiveTracker | None = None
        self._bars: dict[str, object] = {}

    def submission_received(self, record: SubmissionRecord) -> None:
        self.progress.console.print(f"[cyan]→ {safe(record.id)}[/] submitted "
                                    f"{safe(record.model_path)}")
        if self.recorder is not None:
            self.recorder.record(record.id)

    def eval_progress(self, record: SubmissionRecord, done: int, total: int) -> None:
        bar = self._bars.get(record.id)
        if bar is None:
            bar = self._bars[record.id] = self.progress.add_task(f"evaluating {record.id}",
                                                                 total=total)
        self.progress.update(bar, completed=done, total=total)  # type: ignore[arg-type]

    def submission_finished(self, record: SubmissionRecord, best: float | None) -> None:
        bar = self._bars.pop(record.id, None)
        if bar is not None:
            self.progress.remove_task(bar)  # type: ignore[arg-type]
        console = self.progress.console
        if record.score is not None:
            note = " (cached)" if record.cached else ""
            if record.status == "baseline_copy":
                note = " (baseline copy)"
            improvement = "—" if record.improvement is None else f"{record.improvement:+.2f}"
            console.print(f"[green]✔ {safe(record.id)}[/] score {record.score:.2f}{note}  "
                          f"improvement {improvement}  best "
                          f"{'—' if best is None else f'{best:.2f}'}")
        else:
            console.print(f"[red]✘ {safe(record.id)}[/] {safe(record.status)}: "
                          f"{safe(record.error)}")
        try:
            self.summary.submission_finished(record)
        except Exception as exc:  # diagnostics must never break grading
            console.print(f"[yellow]summary for {safe(record.id)} failed: {safe(exc)}[/]")
        if self.tracker is not None:
            self.tracker.submission(record)


class _TaskRun:
    """One task's share of a run: its run directory and record, workspace, baseline, grader
    and live summary. A plain run has one; a `multi` run has one per task and one agent."""

    def __init__(self, config: RunConfig, run_id: str, sandboxed: bool, console: Console,
                 *, ws_root: Path | None = None, base: ResolvedModel | None = None) -> None:
        self.config, self.console = config, console
        self._base = base  # resolved before the run folder exists (a bad --model leaves none)
        self.task = get_task(config.task, config.task_params)
        self.run_dir = Path(config.runs_dir) / config.task / run_id
        if self.run_dir.exists():
            raise A2RLError(f"run directory {self.run_dir} already exists", "use another run id")
        self.run_dir.mkdir(parents=True)
        self.run_dir.chmod(0o700)  # other local users must not read the ledger or outputs
        self.ws_root = ws_root or self.run_dir / "workspace"
        # The record shows the options the user passed with every secret one (a held-out seed
        # given with --task-opt) replaced by a keyed fingerprint: run records are shared.
        shown = config.model_copy(update={"task_params": redacted_spec(
            {"params": config.task_params}, secret_fields(self.task.params),
            self.task.name)["params"]})
        self.record = RunRecord(run_id=run_id, status="setting_up", created_at=utcnow(),
                                config=shown, versions=package_versions(), sandboxed=sandboxed,
                                harness_pid=os.getpid(), flags=run_flags(config, sandboxed))
        self.grader: Grader | None = None
        self.server: GraderServer | None = None
        self.summary: LiveSummary | None = None
        self.events: _RunEvents | None = None
        self.tracker: LiveTracker | None = None  # --log-to: W&B or MLflow while the run goes
        self.scaffold: Any = None  # a2rl.scaffold.Scaffold with --scaffold
        self.scaffold_read_only: list[Path] = []
        self.slot = RecordSlot(self.run_dir / "run.json")
        self.save()
        self.slot.reserve_space()  # bytes and an inode for the closing record

    def save(self, *, final: bool = False) -> None:
        self.slot.write(self.record.model_dump_json(indent=2), final=final)

    def abandon(self, reason: str) -> None:
        """Close the record now, from the main thread, while the close work is stuck."""
        record = self.record
        if self.slot.sealed:  # this part's close finished before another part's got stuck
            return
        record.status = "failed"
        record.exit_reason = record.exit_reason or "harness_error"
        record.error = "; ".join(x for x in (record.error, reason + " (evaluations still in "
                                             "flight were killed)") if x)
        record.ended_at = record.ended_at or utcnow()
        self.slot.seal(record.model_dump_json(indent=2))

    def prepare(self, started: float) -> Workspace:
        """Model, workspace and baseline (not charged to the agent)."""
        config, record, task = self.config, self.record, self.task
        base = self.base = self._base or resolve_model(config.model)
        record.model = ModelInfo(spec=base.spec, source=base.source, path=str(base.path),
                                 content_hash=base.content_hash, model_type=base.model_type)
        record.task = TaskInfo(name=task.name, version=task.version, level=task.level,
                               reward_kind=task.reward_kind,
                               params=redacted_params(task), fingerprint=public_fingerprint(task),
                               scorer=task.scorer(), n_heldout=len(task.heldout_items()))
        from a2rl.inference._chat import load_tokenizer, render_chat
        from a2rl.inference._registry import instructions_line, resolve_for_run

        tokenizer = load_tokenizer(base.path)
        description = task.description(chat_preview=lambda m: render_chat(tokenizer, m))
        # One engine for the baseline and every submission (a2rl.inference._registry).
        record.engine = resolve_for_run(config.engine, memory_fraction=config.vllm_memory,
                                        eval_gpus=config.eval_gpus)
        protocol = GradingProtocol(final=config.final, max_submissions=config.max_submissions,
                                   min_interval_s=config.min_interval_s,
                                   evaluation=instructions_line(record.engine))
        self.ws = build_workspace(self.ws_root, task=task, base=base, mode=config.mode,
                                  budget_s=config.budget_s, description=description,
                                  protocol=protocol, network=NetworkFacts(
                                      config.network, sandboxed=record.sandboxed,
                                      package_index=bool(getattr(task, "allow_package_index",
                                                                 False)),
                                      extra_hosts=tuple(config.allow_hosts)))
        if config.scaffold is not None:  # its tool and instructions, before the agent starts
            from a2rl.scaffold import Scaffold, install

            self.scaffold_read_only = install(config.scaffold, self.ws.root)
            self.scaffold = Scaffold(config.scaffold, self.run_dir, self.ws.root, task,
                                     budget_s=config.budget_s)
        if self.ws_root != self.run_dir / "workspace":  # multi: the run dir points at it
            (self.run_dir / "workspace").symlink_to(self.ws_root)
        record.timings.setup_s = round(time.monotonic() - started, 2)
        self.save()
        from a2rl.tracking import open_tracker

        self.tracker = open_tracker(config.tracking, self.run_dir, record,
                                    lambda text: self.console.print(safe(text), style="yellow"))
        t0 = time.monotonic()
        with _progress(self.console) as progress:
            bar = progress.add_task(f"scoring the baseline ({task.name})", total=None)
            baseline = score_baseline(
                task, base, self.run_dir / "evals" / "baseline", timeout_s=config.eval_timeout_s,
                on_progress=lambda d, t: progress.update(bar, completed=d, total=t),
                final=config.final, test_fraction=config.test_fraction)
        self.baseline = record.baseline = baseline
        if self.tracker is not None:
            self.tracker.baseline(baseline.score, baseline.n_items)
        record.timings.baseline_s = round(time.monotonic() - t0, 2)
        atomic_write_text(self.run_dir / "baseline.json", baseline.model_dump_json(indent=2))
        split = " dev-split" if config.final == "hidden" else ""
        self.console.print(f"baseline ({task.name}): [bold]{baseline.score:.2f}[/] on "
                           f"{baseline.n_items}{split} held-out items" +
                           (" (cached)" if baseline.cached else
                            f" ({baseline.eval_seconds:.0f} s)"))
        if baseline.test_score is not None:
            self.console.print(f"  hidden test split: {baseline.test_score:.2f} on "
                               f"{baseline.test_n_items} items (never shown to the agent)")
        return self.ws

    def start_grader(self, progress: Progress) -> GraderServer:
        from a2rl.analysis import LiveSummary

        self.summary = LiveSummary(self.run_dir, self.task.level)
        self.events = _RunEvents(progress, self.summary)
        self.events.tracker = self.tracker
        self.grader = Grader(self.run_dir, self.ws.root, self.task, self.base, self.baseline,
                             GraderConfig(budget_s=self.config.budget_s,
                                          eval_timeout_s=self.config.eval_timeout_s,
                                          final=self.config.final,
                                          test_fraction=self.config.test_fraction,
                                          keep_artifacts=self.config.keep_artifacts,
                                          max_submissions=self.config.max_submissions,
                                          min_interval_s=self.config.min_interval_s),
                             events=self.events)
        if self.scaffold is not None:
            self.scaffold.attach(self.grader)
        self.server = GraderServer(self.grader, port=self.config.port if not
                                   self.config.tasks else 0,
                                   log_file=self.run_dir / "grader.log",
                                   scaffold=self.scaffold).start()
        self.record.grader_url = self.server.url
        return self.server

    def fail(self, exc: BaseException) -> None:
        record = self.record
        if isinstance(exc, HarnessTerminated):
            record.status, record.exit_reason = "failed", "terminated"
            phase = "setting up" if record.agent_started_at is None else "agent phase"
            record.error = f"the harness got {exc} ({phase}); closed from the ledger"
            return
        if isinstance(exc, KeyboardInterrupt):
            record.status, record.exit_reason = "failed", "interrupted"
            record.error = "interrupted by the user"
            return
        record.status = "failed"
        record.error = str(exc) if isinstance(exc, A2RLError) else f"{type(exc).__name__}: {exc}"
        record.exit_reason = record.exit_reason or "harness_error"

    def close(self, started: float) -> None:
        """Stop the grader and write the final record; never raises for the analysis."""
        record = self.record
        try:
            self._close_grader()
        except Exception as exc:  # the record is written whatever failed before it
            record.status = "failed"
            record.exit_reason = record.exit_reason or "harness_error"
            record.error = "; ".join(x for x in (record.error, "closing the run failed: " + (
                f"the run directory's storage refused a write ({exc})" if storage_failure(exc)
                else f"{type(exc).__name__}: {exc}")) if x)
        record.ended_at = utcnow()
        record.timings.total_s = round(time.monotonic() - started, 2)
        self.save(final=True)
        self.slot.close()
        if self.summary is not None:
            _analyze_quietly(self.run_dir, self.task, self.summary, self.console)
        if self.tracker is not None:
            self.tracker.finish()

    def _close_grader(self) -> None:
        record = self.record
        if self.server is not None:
            self.server.stop()
        if self.grader is not None:
            if self.config.final == "hidden" and record.exit_reason not in ("terminated",
                                                                              "interrupted"):
                # After the agent ended and every dev evaluation finished: the one score on the
                # hidden test split. A run stopped by a signal skips it (it may take long);
                # `a2rl runs repair` cannot run it either, so the record says why it is missing.
                with self.console.status("hidden final evaluation on the test split"):
                    record.final = self.grader.run_final()
            self.grader.close()
            if self.scaffold is not None:
                self.scaffold.close()
                if self.config.scaffold and "skills" in self.config.scaffold.components:
                    _count_skill_reads(self.run_dir, self.console)
            record.submissions = self.grader.ledger.records()
            record.best = self.grader.ledger.best()
            if record.best and record.baseline:
                record.improvement = round(record.best.score - record.baseline.score, 4)


def run_flags(config: RunConfig, sandboxed: bool) -> list[str]:
    """What weakens a run's isolation, shown with its result."""
    flags = [] if sandboxed else ["unsandboxed"]
    if config.network == "full":
        flags.append("network_full")
    return flags


def task_params_for(task: str, params: dict[str, Any]) -> dict[str, Any]:
    """Mode multi: `--task-opt key=v` applies to every task, `--task-opt <task>.key=v` to
    that task only."""
    out = {k: v for k, v in params.items() if "." not in k}
    out.update({k.split(".", 1)[1]: v for k, v in params.items() if k.startswith(task + ".")})
    return out


def _check_config(config: RunConfig) -> tuple[Agent, Sandbox, int | None]:
    """Everything cheap validated before any heavy step."""
    if config.budget_s <= 0:
        raise A2RLError(f"the budget must be positive (got {config.budget_s} s)",
                        "pass e.g. --budget 12h, --budget 30m or --budget 900")
    check_mode(config.mode)
    if config.scaffold is not None:
        if config.tasks:
            raise A2RLError("--scaffold runs one task at a time",
                            "drop --scaffold, or run each task of the multi run separately")
        if "skills" in config.scaffold.components:
            from a2rl.scaffold._workspace import skills_module

            skills_module()
    if config.mode == "multi" and len(config.tasks) < 2:
        raise A2RLError("--mode multi needs several tasks",
                        "pass them comma-separated, e.g. --task gsm8k,humaneval --mode multi")
    if config.mode != "multi" and config.tasks:
        raise A2RLError(f"several tasks ({', '.join(config.tasks)}) need --mode multi",
                        "add --mode multi, or run one task at a time")
    check_limits(port=config.port, eval_timeout_s=config.eval_timeout_s,
                 grace_s=config.grace_s, runs_dir=Path(config.runs_dir))
    agent = get_agent(config.agent)
    plan = None
    if isinstance(agent, CommandAgent):
        plan = plan_command(agent.shell_command, agent_dirs=[Path(d) for d in config.agent_dirs],
                            cwd=Path.cwd(), runs_dir=Path(config.runs_dir))
        agent.shell_command, agent.mounts, agent.notes = plan.command, plan.mounts, plan.notes
    else:
        for d in config.agent_dirs:
            check_mountable(Path(d), Path(config.runs_dir), "--agent-dir")
    if config.network != "full" and config.sandbox == "none":
        raise A2RLError(f"--network {config.network} needs a sandbox (its own network "
                        "namespace)", "drop --no-sandbox, or use --network full")
    sandbox = start_sandbox(config.sandbox)  # fails here, before the baseline, if it cannot run
    if plan is not None:  # the command as the agent's sandbox sees it, before the baseline
        check_in_sandbox(plan, sandbox)
    driver_port = _loopback_port(config.driver_base_url)
    if config.network == "none" and config.driver_base_url and driver_port is None:
        raise A2RLError(f"--network none cannot reach the driver at {config.driver_base_url}",
                        "use --network full for a hosted driver, or serve the driver on this "
                        "machine's loopback (e.g. vLLM on http://127.0.0.1:8000/v1)")
    for name in config.tasks or [config.task]:
        get_task(name, task_params_for(name, config.task_params) if config.tasks
                 else config.task_params)
    return agent, sandbox, driver_port


def run(config: RunConfig, *, console: Console | None = None, echo_agent: bool = False,
        run_id: str | None = None) -> RunRecord:
    """One agent, one task (or, with mode `multi`, several tasks at once: see `run_multi`).
    SIGTERM/SIGHUP close the run like Ctrl-C (exit reason `terminated`)."""
    with terminate_on_signals():
        return _run_one(config, console=console, echo_agent=echo_agent, run_id=run_id)


def _run_one(config: RunConfig, *, console: Console | None, echo_agent: bool,
             run_id: str | None) -> RunRecord:
    if config.tasks:
        records = _run_multi(config, console=console, echo_agent=echo_agent, run_id=run_id)
        return records[0]
    console = console or Console()
    started = time.monotonic()
    agent, sandbox, driver_port = _check_config(config)
    _print_notes(agent, console)
    base = resolve_model(config.model)  # a bad --model fails before the run folder exists
    run_id = run_id or new_run_id(config.agent)
    part = _TaskRun(config, run_id, sandbox.sandboxed, console, base=base)
    console.print(f"[bold]a2rl run[/] {safe(run_id)}  " + safe(
                  f"task={config.task} agent={config.agent} model={config.model} "
                  f"mode={config.mode} budget={config.budget_s:.0f}s sandbox={sandbox.kind} "
                  f"network={config.network}")
                  + ("" if sandbox.sandboxed else "  [bold red]UNSANDBOXED[/]")
                  + ("  [bold red]HOST NETWORK[/]" if config.network == "full" else ""))
    console.print(f"run directory: {safe(part.run_dir)}")
    try:
        ws = part.prepare(started)
        _run_agent(config, agent, sandbox, driver_port, [part], ws, part.run_dir / "agent",
                   console, echo_agent)
        part.record.status = "finished"
    except BaseException as exc:
        part.fail(exc)
        raise
    finally:
        with closing():
            close_parts([part], started, [part.run_dir])
    return part.record


def close_parts(parts: list[_TaskRun], started: float, run_dirs: list[Path]) -> None:
    """Close every part's record under a deadline (a recording.bounded_close): a stuck
    evaluation never keeps the harness from exiting, and SIGTERM during the close is obeyed."""
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


def run_multi(config: RunConfig, *, console: Console | None = None, echo_agent: bool = False,
              run_id: str | None = None) -> list[RunRecord]:
    """See `_run_multi`; SIGTERM/SIGHUP close every task's run like Ctrl-C."""
    with terminate_on_signals():
        return _run_multi(config, console=console, echo_agent=echo_agent, run_id=run_id)


def _run_multi(config: RunConfig, *, console: Console | None = None, echo_agent: bool = False,
               run_id: str | None = None) -> list[RunRecord]:
    """Mode `multi`: one agent, several tasks at once, one budget. Each task gets its own
    workspace folder, grader and run record (runs/<task>/<run_id>/, listed like any run);
    the agent works in runs/multi/<run_id>/workspace/ that holds one folder per task, and its
    transcript lives in runs/multi/<run_id>/agent/ (linked from each task's run)."""
    console = console or Console()
    started = time.monotonic()
    agent, sandbox, driver_port = _check_config(config)
    _print_notes(agent, console)
    base = resolve_model(config.model)  # a bad --model fails before the run folder exists
    run_id = run_id or new_run_id(config.agent)
    root = Path(config.runs_dir) / "multi" / run_id
    if root.exists():
        raise A2RLError(f"run directory {root} already exists", "use another run id")
    (root / "workspace").mkdir(parents=True)
    root.chmod(0o700)
    (root / "agent").mkdir()
    console.print(f"[bold]a2rl run[/] {safe(run_id)}  " + safe(
                  f"tasks={','.join(config.tasks)} agent={config.agent} model={config.model} "
                  f"mode=multi budget={config.budget_s:.0f}s sandbox={sandbox.kind} "
                  f"network={config.network}")
                  + ("" if sandbox.sandboxed else "  [bold red]UNSANDBOXED[/]")
                  + ("  [bold red]HOST NETWORK[/]" if config.network == "full" else ""))
    parts = [_TaskRun(config.model_copy(update={"task": name, "task_params": task_params_for(
                          name, config.task_params)}), run_id, sandbox.sandboxed,
                      console, ws_root=root / "workspace" / name, base=base)
             for name in config.tasks]
    try:
        for part in parts:
            (part.run_dir / "agent").symlink_to(root / "agent")
            part.prepare(started)
        ws = build_multi_root(root / "workspace", config.tasks, budget_s=config.budget_s)
        _run_agent(config, agent, sandbox, driver_port, parts, ws, root / "agent", console,
                   echo_agent)
        for part in parts:
            part.record.status = "finished"
    except BaseException as exc:
        for part in parts:
            part.fail(exc)
        raise
    finally:
        with closing():
            close_parts(parts, started, [root, *(p.run_dir for p in parts)])
        atomic_write_text(root / "multi.json", json.dumps(
            {"run_id": run_id, "tasks": config.tasks,
             "runs": {p.task.name: str(p.run_dir) for p in parts},
             "best": {p.task.name: p.record.best.score if p.record.best else None
                      for p in parts},
             "baseline": {p.task.name: p.record.baseline.score if p.record.baseline else None
                          for p in parts}}, indent=1))
    return [p.record for p in parts]


def _run_agent(config: RunConfig, agent: Agent, sandbox: Sandbox, driver_port: int | None,
               parts: list[_TaskRun], ws: Workspace, agent_dir: Path, console: Console,
               echo_agent: bool) -> None:
    """Start the graders, run the agent in its sandbox under the one budget, drain."""
    bridge: HostBridge | None = None
    proxy: EgressProxy | None = None
    recorders: list[RunRecorder] = []
    try:
        with _progress(console) as progress:
            servers = [part.start_grader(progress) for part in parts]
            graders = [part.grader for part in parts if part.grader is not None]
            ctx = AgentContext(workspace=ws, grader_url=servers[0].url, token=servers[0].token,
                               budget_s=config.budget_s, task=",".join(p.task.name for p in parts),
                               mode=config.mode, python=sys.executable,
                               options=config.agent_options, driver=config.driver,
                               driver_base_url=config.driver_base_url,
                               network=config.network,
                               graders={p.task.name: (s.url, s.token)
                                        for p, s in zip(parts, servers, strict=True)}
                               if len(parts) > 1 else {})
            if len(parts) > 1:
                write_grader_envs(ws, ctx.graders)
            secrets = agent.secrets(ctx)
            agent.prepare(ctx)
            argv = agent.command(ctx)
            agent_env = agent.environment(ctx)
            agent_dir.mkdir(exist_ok=True)
            if config.network in ("allowlist", "none"):
                ports = [s.port for s in servers] + ([driver_port] if driver_port else [])
                served = {}
                if config.network == "allowlist":
                    allowed = _allow_list(config, agent, parts)
                    proxy = EgressProxy(allowed, agent_dir / "network.jsonl")
                    proxy_port = _free_port(set(ports))
                    served[proxy_port] = proxy.handle
                    agent_env.update(_proxy_env(proxy_port))
                    for part in parts:
                        part.record.allowed_hosts = allowed
                bridge = HostBridge(ports, served=served).start()
            read_only = list(dict.fromkeys(agent.sandbox_mounts() + [
                Path(d) for d in config.agent_dirs])) + [
                p.ws.root / entry for p in parts if p.ws.root != ws.root
                for entry in (*READ_ONLY_ENTRIES, GRADER_ENV) if (p.ws.root / entry).exists()
            ] + [path for p in parts for path in p.scaffold_read_only]
            masked, visible = task_mask_hooks(list_tasks())
            if hasattr(sandbox, "limits"):
                from a2rl.sandbox._limits import Limits

                sandbox.limits = Limits.from_options(  # type: ignore[union-attr]
                    config.agent_procs, config.agent_memory, config.agent_file_size)
            argv = sandbox.wrap(argv, workspace=ws.root, read_only=read_only, bridge=bridge,
                                masks=sandbox_masks(masked, visible), env=agent_env)
            # The tracer runs outside the sandbox, around its command line, and writes the log
            # itself: nothing inside can reach the log (no descriptor, no path, no /proc).
            strace = strace_available() if config.exec_trace and sandbox.traceable else None
            exec_log = agent_dir / "exec.log"
            if strace:
                exec_log.unlink(missing_ok=True)
                # With the skills scaffold the trace also records opens: reads of a skill
                # are counted from the files the agent's processes opened.
                extra = (_skills_trace_syscalls() if config.scaffold is not None
                         and "skills" in config.scaffold.components else ())
                argv = traced_command(argv, strace=strace, log=exec_log, extra_syscalls=extra)
            elif config.exec_trace:
                console.print("[yellow]the programs the agent runs are not recorded: " +
                              ("strace is not installed (apt-get install strace)[/]"
                               if sandbox.traceable else
                               f"a tracer cannot follow the {sandbox.kind} sandbox's "
                               "processes[/]"))
            # The sandbox's own programs are not the agent's: bwrap itself, the bridge.
            hide = [[argv[argv.index("--") + 1]]] if strace and sandbox.sandboxed else []
            hide.append([sys.executable, "-c", BRIDGE_CODE])
            for part in parts:
                part.record.agent_package = getattr(getattr(agent, "package", None), "spec",
                                                    None)
                part.record.exec_traced = strace is not None
                part.record.agent_command = scrub(agent.describe(ctx), secrets)
                part.record.status = "running"
                part.record.agent_started_at = utcnow()
                part.save()
            agent_bar = progress.add_task("agent working (budget)", total=config.budget_s)
            for part in parts:
                assert part.grader is not None and part.events is not None
                recorder = part.events.recorder = RunRecorder(
                    part.run_dir, part.ws.root, part.grader.elapsed,
                    every_s=config.snapshot_every_s)
                recorders.append(recorder)
            for grader in graders:  # one budget: the clocks start together
                grader.start_clock()
            for recorder in recorders:
                recorder.start()
            t1, t1_epoch = time.monotonic(), time.time()
            if strace:
                for part in parts:
                    assert part.summary is not None
                    part.summary.builder.exec_t0 = t1_epoch
            from rich.text import Text

            proc = AgentProcess(argv, env=agent_env, cwd=ws.root, secrets=secrets,
                                transcript=agent_dir / "transcript.log",
                                child_setup=sandbox.child_setup(),
                                # plain Text: the agent's output is never parsed as markup
                                echo=(lambda s: echo_agent_line(progress.console, s))
                                if echo_agent else None)
            proof = process_proof(proc.proc.pid)  # for `runs repair`: pids are reused
            for part in parts:
                part.record.agent_pgid = proc.proc.pid
                part.record.agent_proof = proof
                part.save()
                if container := getattr(sandbox, "name", None):  # podman: for `runs repair`
                    atomic_write_text(part.run_dir / SANDBOX_FILE, json.dumps(
                        {"backend": sandbox.kind, "container": container}))
            try:
                reason, code = proc.supervise(
                    lambda: min(g.remaining() for g in graders), grace_s=config.grace_s,
                    tick=lambda: progress.update(agent_bar, completed=graders[0].elapsed()))
            except HarnessTerminated:
                for part in parts:
                    part.record.timings.agent_s = round(time.monotonic() - t1, 2)
                    part.record.agent_exit_code = proc.proc.returncode
                raise
            finally:
                proc.close()
                sandbox.cleanup()
                if strace and exec_log.exists():
                    if secrets:  # argv and environments of the agent's programs may hold a key
                        exec_log.write_text(scrub(exec_log.read_text(errors="replace"), secrets))
                    _write_exec_events(agent_dir, t1_epoch, hide)
            n_events = _write_agent_events(agent, agent_dir, console)
            for grader in graders:
                grader.stop_accepting()
            for recorder in recorders:
                recorder.stop()
            recorders.clear()
            for part in parts:
                part.record.agent_events = n_events
                part.record.timings.agent_s = round(time.monotonic() - t1, 2)
                part.record.exit_reason, part.record.agent_exit_code = reason, code
            progress.remove_task(agent_bar)
            console.print(f"agent stopped: {reason} (exit code {code})")
            hint = early_exit_hint(agent_dir / "transcript.log", code,
                                   parts[0].record.timings.agent_s) \
                if reason == "agent_exited" else None
            for i, line in enumerate(hint or []):  # the transcript is the agent's text
                if i >= 2 and line.startswith("  "):  # its lines, marked as the agent's
                    echo_agent_line(console, plain_text(line[2:]))
                else:
                    console.print(Text(plain_text(line), style="yellow"), highlight=False)
            t2 = time.monotonic()
            for part, grader in zip(parts, graders, strict=True):
                if not grader.wait_idle(timeout=config.eval_timeout_s + 60):
                    console.print(f"[yellow]an evaluation of {safe(part.task.name)} did not finish "
                                  "in time[/]")
                part.record.timings.drain_s = round(time.monotonic() - t2, 2)
    finally:
        for recorder in recorders:
            recorder.stop()
        if bridge is not None:
            bridge.stop()
        if proxy is not None:
            proxy.close()
            for part in parts:
                part.record.network_attempts = dict(proxy.counts)
        sandbox.cleanup()


AGENT_PREFIX = "  agent│ "


def echo_agent_line(console: Console, text: str) -> None:
    """One line of the agent's output (already free of control characters) on the operator's
    console: every screen line it takes starts with AGENT_PREFIX, so no part of it can pass
    for a harness line (a long line is cut into pieces that each fit, never left to wrap)."""
    from rich.cells import chop_cells
    from rich.text import Text

    for piece in chop_cells(text, max(20, console.width - len(AGENT_PREFIX))) or [""]:
        console.print(Text(AGENT_PREFIX + piece, style="dim"), highlight=False, no_wrap=True,
                      overflow="crop", crop=True)


def _print_notes(agent: Agent, console: Console) -> None:
    from rich.text import Text

    for note in getattr(agent, "notes", []):
        console.print(Text(plain_text(note), style="yellow"), highlight=False)


def _allow_list(config: RunConfig, agent: Agent, parts: list[_TaskRun]) -> list[str]:
    """The derived allow-list: the agent's API hosts (its own `network_hosts()` if it has one,
    else its declared `api_hosts`) or the driver endpoint's host, package indexes when every task
    permits them (`Task.allow_package_index`), and --allow-host."""
    hook = getattr(agent, "network_hosts", None)
    own = list(hook(config.driver_base_url)) if callable(hook) else None
    packages = all(bool(getattr(p.task, "allow_package_index", False)) for p in parts)
    hosts = default_allow_list(agent.api_hosts, config.driver_base_url, own or [],
                               package_indexes=packages) if own is None else own
    if own is not None and packages:
        hosts += default_allow_list((), None, [], package_indexes=True)
    return list(dict.fromkeys([*hosts, *config.allow_hosts]))


def _proxy_env(port: int) -> dict[str, str]:
    """Every spelling HTTP clients read (curl, pip, requests/httpx, node, Go, Rust)."""
    url = f"http://127.0.0.1:{port}"
    local = "127.0.0.1,localhost,::1"
    return {"HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
            "ALL_PROXY": url, "all_proxy": url, "NO_PROXY": local, "no_proxy": local,
            "A2RL_EGRESS_PROXY": url}


def _free_port(taken: set[int]) -> int:
    """A port for the proxy inside the sandbox's own namespace (nothing else listens there but
    the relayed ports); chosen free on the host too so the URL reads the same everywhere."""
    import socket

    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in taken:
            return port


def _loopback_port(url: str | None) -> int | None:
    """The port of a driver endpoint on this machine's loopback (relayed under network none)."""
    if not url:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return None
    return parts.port or (443 if parts.scheme == "https" else 80)


def _write_agent_events(agent: Agent, agent_dir: Path, console: Console) -> int | None:
    """agent/events.jsonl from the CLI's transcript; a parser failure never loses the run."""
    try:
        n = agent.write_events(agent_dir)
    except Exception as exc:
        console.print(f"[yellow]could not parse the agent's transcript into events "
                      f"({type(exc).__name__}: {safe(exc)})[/]")
        return None
    return n if (agent_dir / "events.jsonl").exists() else None


def _write_exec_events(agent_dir: Path, t0: float, hide: list[list[str]]) -> None:
    raw = agent_dir / "exec.log"
    events = parse_exec_log(raw.read_text(errors="replace"), t0, hide=hide)
    atomic_write_text(agent_dir / "exec.jsonl",
                      "".join(e.model_dump_json() + "\n" for e in events))


def _skills_trace_syscalls() -> tuple[str, ...]:
    from a2rl.scaffold._skills import TRACE_SYSCALLS

    return tuple(TRACE_SYSCALLS)


def _count_skill_reads(run_dir: Path, console: Console) -> None:
    """Skill consults and agent-written skills, counted while the workspace still exists (the
    created skills are copied out of it); a failure is reported, never raised: the run's
    record matters more."""
    from a2rl.scaffold._skills import count_skill_reads

    try:
        count_skill_reads(run_dir)
    except Exception as exc:  # noqa: BLE001 - diagnostics only
        console.print(f"[yellow]skill reads not counted: {safe(str(exc))}[/]")


def _analyze_quietly(run_dir: Path, task: Task, summary: LiveSummary, console: Console) -> None:
    """Close the live summary with the run-level analysis; a failure here never loses the run
    record (and `a2rl analyze` can redo it)."""
    try:
        analysis = summary.finish(task.heldout_items())
        console.print(f"analysis: route {safe(analysis.route)}; {len(analysis.findings)} audit "
                      f"finding(s); see {safe(run_dir / 'summary.md')}")
    except Exception as exc:  # analysis is diagnostics: report and go on
        console.print(f"[yellow]analysis failed ({type(exc).__name__}: {safe(exc)}); "
                      f"rerun with `a2rl analyze {safe(run_dir)}`[/]")


def load_run(path: Path) -> RunRecord:
    return RunRecord.model_validate_json((path / "run.json").read_text())


