"""One task's share of a run (`TaskPart`): its run folder and record, workspace, baseline, grader
and the grader's events, calling the run extensions' hooks at each step. A plain run has one; a
`multi` run has one per task and one agent."""

from __future__ import annotations

import logging
import os
import platform
import time
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from a2rl._console import progress_for, safe
from a2rl._errors import A2RLError
from a2rl._util import atomic_write_text, utcnow
from a2rl.capture import RecordSlot, close_cost, storage_failure
from a2rl.extensions import RunExtension, submit_refusals
from a2rl.grader import (
    Grader,
    GraderConfig,
    GraderServer,
    public_fingerprint,
    redacted_params,
    redacted_spec,
    score_baseline,
    secret_fields,
)
from a2rl.models import ResolvedModel
from a2rl.runner._lifecycle import mark_sha256, run_mark
from a2rl.runner._supervise import HarnessTerminated
from a2rl.schema import ModelInfo, RunConfig, RunRecord, SubmissionRecord, TaskInfo
from a2rl.tasks import get_task
from a2rl.workspace import (
    GradingProtocol,
    NetworkFacts,
    Workspace,
    build_workspace,
    model_copy_changes,
)

log = logging.getLogger("a2rl.grader.events")
T = TypeVar("T")

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


def run_flags(config: RunConfig, sandboxed: bool) -> list[str]:
    """What weakens a run's isolation, shown with its result."""
    flags = [] if sandboxed else ["unsandboxed"]
    if config.network == "full":
        flags.append("network_full")
    return flags


def live_progress(console: Console) -> Progress:
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
    """The grader's event hooks for one part: submissions and evaluation progress on the
    console, then each extension's hook (one that raises is logged to grader.log and skipped;
    the others still run)."""

    def __init__(self, part: TaskPart, progress: Progress) -> None:
        self.part, self.progress = part, progress
        self._bars: dict[str, object] = {}

    def submission_received(self, record: SubmissionRecord) -> None:
        try:
            self.progress.console.print(f"[cyan]→ {safe(record.id)}[/] submitted "
                                        f"{safe(record.model_path)}")
        finally:
            for ext in self.part.extensions:
                try:
                    ext.submission_received(self.part, record)
                except Exception:
                    log.exception("extension %s: submission_received failed", ext.name)

    def eval_progress(self, record: SubmissionRecord, done: int, total: int) -> None:
        bar = self._bars.get(record.id)
        if bar is None:
            bar = self._bars[record.id] = self.progress.add_task(f"evaluating {record.id}",
                                                                 total=total)
        self.progress.update(bar, completed=done, total=total)  # type: ignore[arg-type]

    def submission_finished(self, record: SubmissionRecord, best: float | None) -> None:
        try:
            self._show(record, best)
        finally:
            for ext in self.part.extensions:
                try:
                    ext.submission_finished(self.part, record, best)
                except Exception:
                    log.exception("extension %s: submission_finished failed", ext.name)

    def _show(self, record: SubmissionRecord, best: float | None) -> None:
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


class TaskPart:
    """One task's share of a run: its run directory and record, workspace, baseline and
    grader, with the run's extensions (`a2rl.extensions.TaskPart` is how they see it)."""

    def __init__(self, config: RunConfig, run_id: str, sandboxed: bool, console: Console,
                 *, extensions: Sequence[RunExtension], base: ResolvedModel,
                 ws_root: Path | None = None, agent_dir: Path | None = None) -> None:
        self.config, self.console, self.extensions = config, console, extensions
        self.base = base  # resolved before the run folder exists (a bad --model leaves none)
        self.task = get_task(config.task, config.task_params)
        self.run_dir = Path(config.runs_dir) / config.task / run_id
        if self.run_dir.exists():
            raise A2RLError(f"run directory {self.run_dir} already exists", "use another run id")
        self.run_dir.mkdir(parents=True)
        self.run_dir.chmod(0o700)  # other local users must not read the ledger or outputs
        self.ws_root = ws_root or self.run_dir / "workspace"
        self.agent_dir = agent_dir or self.run_dir / "agent"
        # The record shows the options the user passed with every secret one (a held-out seed
        # given with --task-opt) replaced by a keyed fingerprint: run records are shared.
        shown = config.model_copy(update={"task_params": redacted_spec(
            {"params": config.task_params}, secret_fields(self.task.params),
            self.task.name)["params"]})
        self.record = RunRecord(run_id=run_id, status="setting_up", created_at=utcnow(),
                                config=shown, versions=package_versions(), sandboxed=sandboxed,
                                harness_pid=os.getpid(), flags=run_flags(config, sandboxed),
                                process_mark_sha256=mark_sha256(run_mark()))
        self.grader: Grader | None = None
        self.server: GraderServer | None = None
        self.read_only: list[Path] = []  # what the extensions mount read-only
        self.slot = RecordSlot(self.run_dir / "run.json")
        self.save()
        self.slot.reserve_space()  # bytes and an inode for the closing record
        self.slot.reserve_inodes()  # for the records written once the agent is gone

    @property
    def workspace(self) -> Path:
        return self.ws_root

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

    def prepare_workspace(self, started: float) -> Workspace:
        """The record's model and task, the workspace and what the extensions add to it."""
        config, record, task, base = self.config, self.record, self.task, self.base
        if self.agent_dir != self.run_dir / "agent":  # multi: the run dir points at it
            (self.run_dir / "agent").symlink_to(self.agent_dir)
        record.model = ModelInfo(spec=base.spec, source=base.source, path=str(base.path),
                                 content_hash=base.content_hash, model_type=base.model_type)
        record.task = TaskInfo(name=task.name, version=task.version, level=task.level,
                               reward_kind=task.reward_kind,
                               params=redacted_params(task), fingerprint=public_fingerprint(task),
                               scorer=task.scorer(), n_heldout=len(task.heldout_items()))
        from a2rl.inference import instructions_line, load_tokenizer, render_chat, resolve_for_run

        tokenizer = load_tokenizer(base.path)
        description = task.description(chat_preview=lambda m: render_chat(tokenizer, m))
        # One engine for the baseline and every submission (a2rl.inference._registry).
        record.engine = resolve_for_run(config.engine, memory_fraction=config.vllm_memory,
                                        eval_gpus=config.eval_gpus)
        protocol = GradingProtocol(final=config.final, max_submissions=config.max_submissions,
                                   min_interval_s=config.min_interval_s,
                                   evaluation=instructions_line(record.engine))
        self.ws = build_workspace(self.ws_root, task=task, base=base, mode=config.mode,
                                  budget_s=config.agent_time_limit_s, description=description,
                                  protocol=protocol, network=NetworkFacts(
                                      config.network, sandboxed=record.sandboxed,
                                      package_index=bool(getattr(task, "allow_package_index",
                                                                 False)),
                                      extra_hosts=tuple(config.allow_hosts)),
                                  mount_model=record.sandboxed)
        for ext in self.extensions:  # their files, before the agent starts
            self.read_only += ext.prepare_workspace(self)
        if self.ws_root != self.run_dir / "workspace":  # multi: the run dir points at it
            (self.run_dir / "workspace").symlink_to(self.ws_root)
        record.timings.setup_s = round(time.monotonic() - started, 2)
        self.save()
        for ext in self.extensions:
            ext.setup_done(self)
        return self.ws

    def score_baseline(self) -> None:
        """The base model's score (cached across runs; not charged to the agent)."""
        config, record, task = self.config, self.record, self.task
        t0 = time.monotonic()
        with live_progress(self.console) as bars:
            bar = bars.add_task(f"scoring the baseline ({task.name})", total=None)
            baseline = score_baseline(
                task, self.base, self.run_dir / "evals" / "baseline",
                timeout_s=config.eval_timeout_s,
                on_progress=lambda d, t: bars.update(bar, completed=d, total=t),
                final=config.final, test_fraction=config.test_fraction)
        self.baseline = record.baseline = baseline
        for ext in self.extensions:
            ext.baseline_scored(self, baseline)
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

    def start_grader(self, progress: Progress) -> GraderServer:
        """The grader and its server, with the routes the extensions contribute."""
        config = self.config
        self.grader = Grader(self.run_dir, self.ws.root, self.task, self.base, self.baseline,
                             GraderConfig(config),
                             events=_RunEvents(self, progress))
        for ext in self.extensions:
            ext.grader_created(self, self.grader)
        routers = [router for ext in self.extensions for router in ext.grader_routes(self)]
        self.server = GraderServer(self.grader, port=config.port if not config.tasks else 0,
                                   log_file=self.run_dir / "grader.log", routers=routers,
                                   submit_refusals=submit_refusals(
                                       [type(ext) for ext in self.extensions])).start()
        self.record.grader_url = self.server.url
        return self.server

    def fail(self, exc: BaseException, *, on_purpose: bool = False) -> None:
        """Record why the run ended early. A signal or Ctrl-C with `on_purpose` (its operator,
        e.g. a sweep, said it stops the run) is no failure: status and exit reason `stopped`."""
        record = self.record
        if isinstance(exc, KeyboardInterrupt) and on_purpose:
            record.status, record.exit_reason = "stopped", "stopped"
            return
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
        """Stop the grader and write the final record, then the extensions' closing hooks
        (diagnostics: a failure there is shown, never raised)."""
        record = self.record
        try:
            self._close_grader()
        except Exception as exc:  # the record is written whatever failed before it
            record.status = "failed"
            record.exit_reason = record.exit_reason or "harness_error"
            record.error = "; ".join(x for x in (record.error, "closing the run failed: " + (
                f"the run directory's storage refused a write ({exc})" if storage_failure(exc)
                else f"{type(exc).__name__}: {exc}")) if x)
        # unsandboxed only (a sandbox mounts the model read-only): did the agent change its copy?
        if not record.sandboxed and hasattr(self, "ws") and (
                changed := model_copy_changes(self.ws.model_dir, self.base)):
            record.flags.append("base_model_modified")
            self.console.print(f"[yellow]the agent changed its copy of the base model: "
                               f"{safe(', '.join(changed))} (flagged base_model_modified)[/]")
        record.cost = close_cost(record, self.run_dir)  # + evaluations' GPU-hours, disk
        record.ended_at = utcnow()
        record.timings.total_s = round(time.monotonic() - started, 2)
        self.save(final=True)
        self.slot.close()
        analysis = None
        for ext in self.extensions:
            found = self._diagnostic(ext, ext.analyze, self)
            analysis = analysis or found
        for ext in self.extensions:
            if analysis is not None:
                self._diagnostic(ext, ext.analysis_written, self, analysis)
        for ext in self.extensions:
            self._diagnostic(ext, ext.run_closing, self)

    def _diagnostic(self, ext: RunExtension, hook: Callable[..., T], *args: object) -> T | None:
        """A closing hook: the record is sealed already, so a failure is shown, never raised."""
        try:
            return hook(*args)
        except Exception as exc:  # noqa: BLE001
            self.console.print(f"[yellow]{safe(ext.name)} failed at the close "
                               f"({type(exc).__name__}: {safe(exc)})[/]")
            return None

    def _close_grader(self) -> None:
        record = self.record
        if self.server is not None:
            self.server.stop()
        if self.grader is not None:
            if self.config.final == "hidden" and record.exit_reason not in (
                    "terminated", "interrupted", "stopped"):
                # After the agent ended and every dev evaluation finished: the one score on the
                # hidden test split. A run stopped by a signal skips it (it may take long);
                # `a2rl runs repair` cannot run it either, so the record says why it is missing.
                with self.console.status("hidden final evaluation on the test split"):
                    record.final = self.grader.run_final()
            self.grader.close()
            for ext in self.extensions:
                ext.grader_closed(self)
            record.submissions = self.grader.ledger.records()
            record.best = self.grader.ledger.best()
            if record.best and record.baseline:
                record.improvement = round(record.best.score - record.baseline.score, 4)
