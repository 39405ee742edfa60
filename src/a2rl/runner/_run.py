"""`a2rl run`: workspace → baseline → grader → agent (sandboxed, budgeted) → ledger → run.json."""

from __future__ import annotations

import os
import platform
import secrets
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

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
from a2rl._secrets import scrub
from a2rl._util import atomic_write_text, utcnow
from a2rl.agents import Agent, AgentContext, get_agent
from a2rl.grader import (
    Grader,
    GraderConfig,
    GraderServer,
    SubmissionRecord,
    score_baseline,
)
from a2rl.models import resolve_model
from a2rl.recording import RunRecorder, parse_exec_log, strace_available, traced_command
from a2rl.runner._records import ModelInfo, RunConfig, RunRecord, TaskInfo
from a2rl.runner._supervise import AgentProcess
from a2rl.sandbox import HostBridge, get_sandbox
from a2rl.tasks import Task, get_task
from a2rl.workspace import build_workspace, check_mode

if TYPE_CHECKING:  # analysis reads run records, so it is imported lazily
    from a2rl.analysis import LiveSummary

_VERSIONED = ("a2rl", "torch", "transformers", "trl", "accelerate", "datasets", "reasoning-gym",
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
    return Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(),
                    TimeRemainingColumn(), console=console, transient=True)


class _RunEvents:
    """Shows submissions and evaluation progress while the agent works, and snapshots the
    agent's code and models at each submission."""

    def __init__(self, progress: Progress, summary: LiveSummary) -> None:
        self.progress = progress
        self.summary = summary
        self.recorder: RunRecorder | None = None
        self._bars: dict[str, object] = {}

    def submission_received(self, record: SubmissionRecord) -> None:
        self.progress.console.print(f"[cyan]→ {record.id}[/] submitted {record.model_path}")
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
            console.print(f"[green]✔ {record.id}[/] score {record.score:.2f}{note}  "
                          f"improvement {record.improvement:+.2f}  best {best:.2f}")
        else:
            console.print(f"[red]✘ {record.id}[/] {record.status}: {record.error}")
        try:
            self.summary.submission_finished(record)
        except Exception as exc:  # diagnostics must never break grading
            console.print(f"[yellow]summary for {record.id} failed: {exc}[/]")


def run(config: RunConfig, *, console: Console | None = None, echo_agent: bool = False,
        run_id: str | None = None) -> RunRecord:
    console = console or Console()
    started = time.monotonic()
    # Validate everything cheap before any heavy step.
    if config.budget_s <= 0:
        raise A2RLError(f"the budget must be positive (got {config.budget_s} s)",
                        "pass e.g. --budget 12h, --budget 30m or --budget 900")
    check_mode(config.mode)
    agent = get_agent(config.agent)
    sandbox = get_sandbox(config.sandbox)
    if config.network == "none" and not sandbox.sandboxed:
        raise A2RLError("--network none needs the sandbox",
                        "drop --no-sandbox, or use --network full")
    driver_port = _loopback_port(config.driver_base_url)
    if config.network == "none" and config.driver_base_url and driver_port is None:
        raise A2RLError(f"--network none cannot reach the driver at {config.driver_base_url}",
                        "use --network full for a hosted driver, or serve the driver on this "
                        "machine's loopback (e.g. vLLM on http://127.0.0.1:8000/v1)")
    task = get_task(config.task, config.task_params)

    run_id = run_id or new_run_id(config.agent)
    run_dir = Path(config.runs_dir) / config.task / run_id
    if run_dir.exists():
        raise A2RLError(f"run directory {run_dir} already exists", "use another run id")
    run_dir.mkdir(parents=True)
    run_dir.chmod(0o700)  # other local users must not read the ledger or held-out outputs
    record = RunRecord(run_id=run_id, status="setting_up", created_at=utcnow(), config=config,
                       versions=package_versions(), sandboxed=sandbox.sandboxed)
    save = lambda: atomic_write_text(run_dir / "run.json", record.model_dump_json(indent=2))  # noqa: E731
    save()
    console.print(f"[bold]a2rl run[/] {run_id}  task={config.task} agent={config.agent} "
                  f"model={config.model} mode={config.mode} budget={config.budget_s:.0f}s"
                  + ("" if sandbox.sandboxed else "  [bold red]UNSANDBOXED[/]"))
    console.print(f"run directory: {run_dir}")
    server: GraderServer | None = None
    bridge: HostBridge | None = None
    grader: Grader | None = None
    live_summary: LiveSummary | None = None
    try:
        base = resolve_model(config.model)
        record.model = ModelInfo(spec=base.spec, source=base.source, path=str(base.path),
                                 content_hash=base.content_hash, model_type=base.model_type)
        record.task = TaskInfo(name=task.name, version=task.version, level=task.level,
                               reward_kind=task.reward_kind,
                               params=task.params.model_dump(mode="json"),
                               fingerprint=task.fingerprint(), n_heldout=len(task.heldout_items()))
        from a2rl.inference._chat import load_tokenizer, render_chat

        tokenizer = load_tokenizer(base.path)
        description = task.description(chat_preview=lambda m: render_chat(tokenizer, m))
        ws = build_workspace(run_dir / "workspace", task=task, base=base, mode=config.mode,
                             budget_s=config.budget_s, description=description)
        record.timings.setup_s = round(time.monotonic() - started, 2)
        save()

        t0 = time.monotonic()
        with _progress(console) as progress:
            bar = progress.add_task("scoring the baseline", total=None)
            baseline = score_baseline(
                task, base, run_dir / "evals" / "baseline", timeout_s=config.eval_timeout_s,
                on_progress=lambda d, t: progress.update(bar, completed=d, total=t))
        record.baseline = baseline
        record.timings.baseline_s = round(time.monotonic() - t0, 2)
        atomic_write_text(run_dir / "baseline.json", baseline.model_dump_json(indent=2))
        console.print(f"baseline: [bold]{baseline.score:.2f}[/] on {baseline.n_items} held-out "
                      f"items" + (" (cached)" if baseline.cached else
                                  f" ({baseline.eval_seconds:.0f} s)"))

        with _progress(console) as progress:
            from a2rl.analysis import LiveSummary

            live_summary = LiveSummary(run_dir, task.level)
            events = _RunEvents(progress, live_summary)
            grader = Grader(run_dir, ws.root, task, base, baseline,
                            GraderConfig(budget_s=config.budget_s,
                                         eval_timeout_s=config.eval_timeout_s), events=events)
            server = GraderServer(grader, port=config.port,
                                  log_file=run_dir / "grader.log").start()
            record.grader_url = server.url
            ctx = AgentContext(workspace=ws, grader_url=server.url, token=server.token,
                               budget_s=config.budget_s, task=task.name, mode=config.mode,
                               python=sys.executable, options=config.agent_options,
                               driver=config.driver, driver_base_url=config.driver_base_url)
            secrets = agent.secrets(ctx)
            agent.prepare(ctx)
            argv = agent.command(ctx)
            agent_env = agent.environment(ctx)
            record.agent_package = getattr(getattr(agent, "package", None), "spec", None)
            trace_fd: int | None = None
            strace = strace_available() if config.exec_trace else None
            if strace:
                (run_dir / "agent").mkdir(exist_ok=True)
                trace_fd = os.open(run_dir / "agent" / "exec.log",
                                   os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                argv = traced_command(argv, strace=strace, fd=trace_fd)
            elif config.exec_trace:
                console.print("[yellow]strace is not installed: the programs the agent runs are "
                              "not recorded (apt-get install strace)[/]")
            record.exec_traced = trace_fd is not None
            if config.network == "none":
                ports = [server.port] + ([driver_port] if driver_port else [])
                bridge = HostBridge(run_dir / "net", ports).start()
            argv = sandbox.wrap(argv, workspace=ws.root, read_only=agent.sandbox_mounts(),
                                bridge=bridge)
            record.agent_command = scrub(agent.describe(ctx), secrets)
            record.status = "running"
            record.agent_started_at = utcnow()
            save()
            agent_bar = progress.add_task("agent working (budget)", total=config.budget_s)
            recorder = events.recorder = RunRecorder(run_dir, ws.root, grader.elapsed,
                                                     every_s=config.snapshot_every_s)
            grader.start_clock()
            recorder.start()
            t1, t1_epoch = time.monotonic(), time.time()
            if trace_fd is not None:
                live_summary.builder.exec_t0 = t1_epoch
            proc = AgentProcess(argv, env=agent_env, cwd=ws.root, secrets=secrets,
                                pass_fds=(trace_fd,) if trace_fd is not None else (),
                                transcript=run_dir / "agent" / "transcript.log",
                                echo=(lambda s: progress.console.print(f"[dim]  agent│ {s}[/]",
                                                                       markup=True,
                                                                       highlight=False))
                                if echo_agent else None)
            reason, code = proc.supervise(
                grader.remaining, grace_s=config.grace_s,
                tick=lambda: progress.update(agent_bar, completed=grader.elapsed()))
            proc.close()
            if trace_fd is not None:
                os.close(trace_fd)
                _write_exec_events(run_dir, t1_epoch)
            record.agent_events = _write_agent_events(agent, run_dir, console)
            grader.stop_accepting()
            recorder.stop()
            record.timings.agent_s = round(time.monotonic() - t1, 2)
            record.exit_reason, record.agent_exit_code = reason, code
            progress.remove_task(agent_bar)
            console.print(f"agent stopped: {reason} (exit code {code})")
            t2 = time.monotonic()
            if not grader.wait_idle(timeout=config.eval_timeout_s + 60):
                console.print("[yellow]an evaluation did not finish in time[/]")
            record.timings.drain_s = round(time.monotonic() - t2, 2)
        record.status = "finished"
    except KeyboardInterrupt:
        record.status, record.exit_reason = "failed", "interrupted"
        record.error = "interrupted by the user"
        raise
    except A2RLError as exc:
        record.status, record.error = "failed", str(exc)
        record.exit_reason = record.exit_reason or "harness_error"
        raise
    except Exception as exc:
        record.status, record.error = "failed", f"{type(exc).__name__}: {exc}"
        record.exit_reason = record.exit_reason or "harness_error"
        raise
    finally:
        if bridge is not None:
            bridge.stop()
        if server is not None:
            server.stop()
        if grader is not None:
            grader.close()
            record.submissions = grader.ledger.records()
            record.best = grader.ledger.best()
            if record.best and record.baseline:
                record.improvement = round(record.best.score - record.baseline.score, 4)
        record.ended_at = utcnow()
        record.timings.total_s = round(time.monotonic() - started, 2)
        save()
        if live_summary is not None:
            _analyze_quietly(run_dir, task, live_summary, console)
    return record


def _loopback_port(url: str | None) -> int | None:
    """The port of a driver endpoint on this machine's loopback (relayed under network none)."""
    if not url:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return None
    return parts.port or (443 if parts.scheme == "https" else 80)


def _write_agent_events(agent: Agent, run_dir: Path, console: Console) -> int | None:
    """agent/events.jsonl from the CLI's transcript; a parser failure never loses the run."""
    try:
        n = agent.write_events(run_dir / "agent")
    except Exception as exc:
        console.print(f"[yellow]could not parse the agent's transcript into events "
                      f"({type(exc).__name__}: {exc})[/]")
        return None
    return n if (run_dir / "agent" / "events.jsonl").exists() else None


def _write_exec_events(run_dir: Path, t0: float) -> None:
    raw = run_dir / "agent" / "exec.log"
    events = parse_exec_log(raw.read_text(errors="replace"), t0)
    atomic_write_text(run_dir / "agent" / "exec.jsonl",
                      "".join(e.model_dump_json() + "\n" for e in events))


def _analyze_quietly(run_dir: Path, task: Task, summary: LiveSummary, console: Console) -> None:
    """Close the live summary with the run-level analysis; a failure here never loses the run
    record (and `a2rl analyze` can redo it)."""
    try:
        analysis = summary.finish(task.heldout_items())
        console.print(f"analysis: route {analysis.route}; {len(analysis.findings)} audit finding(s); "
                      f"see {run_dir / 'summary.md'}")
    except Exception as exc:  # analysis is diagnostics: report and go on
        console.print(f"[yellow]analysis failed ({type(exc).__name__}: {exc}); "
                      f"rerun with `a2rl analyze {run_dir}`[/]")


def load_run(path: Path) -> RunRecord:
    return RunRecord.model_validate_json((path / "run.json").read_text())


