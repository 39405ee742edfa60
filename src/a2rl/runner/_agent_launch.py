"""The agent's part of a run: its command in the sandbox (changed and wrapped by the run
extensions), its start on the one budget, its supervision, the drain of the evaluations in
flight, and the launch's close."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress, TaskID

from a2rl._console import plain_text, safe
from a2rl._secrets import scrub
from a2rl._util import atomic_write_text, utcnow
from a2rl.agents import Agent, AgentContext, CommandAgent
from a2rl.capture import (
    INODE_RESERVE,
    ResourceSampler,
    ResourceSamples,
    free_inodes,
    storage_failure,
)
from a2rl.extensions import AgentLaunch, RunExtension
from a2rl.grader import Grader
from a2rl.runner._lifecycle import RUN_MARK_ENV, SANDBOX_FILE, process_proof, run_mark
from a2rl.runner._precheck import early_exit_hint
from a2rl.runner._provenance import record_provenance
from a2rl.runner._spend import CostWatch, agent_spend, pricing_model, recorded_events, unpriced_note
from a2rl.runner._supervise import AgentProcess, HarnessTerminated
from a2rl.sandbox import READ_ONLY_ENTRIES, sandbox_masks
from a2rl.schema import AgentEvent
from a2rl.tasks import list_tasks, task_mask_hooks
from a2rl.workspace import GRADER_ENV, Workspace, write_grader_envs

AGENT_PREFIX = "  agent│ "
PODMAN_MEMORY = "not measured (podman: the container's processes are not the harness's)"


def _graders(launch: AgentLaunch) -> list[Grader]:
    return [part.grader for part in launch.parts if part.grader is not None]


def prepare_launch(launch: AgentLaunch, ws: Workspace) -> AgentContext:
    """The agent's command, environment and mounts; the extensions change them, the sandbox
    wraps the command, then the extensions may wrap the sandbox's command line."""
    config, agent, sandbox, parts = launch.config, launch.agent, launch.sandbox, launch.parts
    servers = [part.server for part in parts if part.server is not None]
    ctx = AgentContext(workspace=ws, grader_url=servers[0].url, token=servers[0].token,
                       config=config, task=",".join(p.task.name for p in parts),
                       python=sys.executable,
                       graders={p.task.name: (s.url, s.token)
                                for p, s in zip(parts, servers, strict=True)}
                       if len(parts) > 1 else {})
    if len(parts) > 1:
        write_grader_envs(ws, ctx.graders)
    launch.secrets = agent.secrets(ctx)
    agent.prepare(ctx)
    launch.argv = agent.command(ctx)
    launch.env = {**agent.environment(ctx), RUN_MARK_ENV: run_mark()}  # for `runs repair`
    record_provenance(launch, ctx)  # the CLI's version, asked inside the sandbox
    launch.agent_dir.mkdir(exist_ok=True)
    # the user's own folders, mounted as they are: what only their owner may read is masked
    own = [Path(d) for d in config.agent_dirs] + (
        agent.sandbox_mounts() if isinstance(agent, CommandAgent) else [])
    launch.read_only = list(dict.fromkeys(agent.sandbox_mounts() + [
        Path(d) for d in config.agent_dirs])) + [
        p.workspace / entry for p in parts if p.workspace != ws.root
        for entry in (*READ_ONLY_ENTRIES, GRADER_ENV) if (p.workspace / entry).exists()
    ] + [path for p in parts for path in p.read_only]
    for ext in launch.extensions:
        ext.agent_environment(launch)
    masked, visible = task_mask_hooks(list_tasks())
    launch.argv = sandbox.wrap(launch.argv, workspace=ws.root, read_only=launch.read_only,
                               bridge=launch.bridge,
                               masks=sandbox_masks(masked, visible, mounted=own),
                               env=launch.env)
    for ext in launch.extensions:
        ext.wrap_command(launch)
    return ctx


def start_agent(launch: AgentLaunch, ctx: AgentContext, progress: Progress,
                echo_agent: bool) -> tuple[AgentProcess, TaskID, float]:
    """Record the start, start the graders' clocks together (one budget), start the agent.
    Returns the process, its progress bar and its start (monotonic)."""
    agent, sandbox = launch.agent, launch.sandbox
    for part in launch.parts:
        part.record.agent_package = getattr(getattr(agent, "package", None), "spec", None)
        part.record.agent_command = scrub(agent.describe(ctx), launch.secrets)
        part.record.status = "running"
        part.record.agent_started_at = utcnow()
        for ext in launch.extensions:
            ext.agent_starting(part, launch)
        part.save()
    agent_bar = progress.add_task("agent working (budget)",
                                  total=launch.config.agent_time_limit_s)
    for grader in _graders(launch):
        grader.start_clock()
    t1, launch.started_epoch = time.monotonic(), time.time()
    for part in launch.parts:
        for ext in launch.extensions:
            ext.agent_started(part, launch)
    proc = AgentProcess(launch.argv, env=launch.env, cwd=ctx.workspace.root,
                        secrets=launch.secrets, transcript=launch.agent_dir / "transcript.log",
                        child_setup=sandbox.child_setup(),
                        # plain Text: the agent's output is never parsed as markup
                        echo=(lambda s: echo_agent_line(progress.console, s))
                        if echo_agent else None)
    proof = process_proof(proc.proc.pid)  # for `runs repair`: pids are reused
    for part in launch.parts:
        part.record.agent_pgid = proc.proc.pid
        part.record.agent_proof = proof
        part.save()
        leftovers = getattr(sandbox, "leftovers", None)
        if callable(leftovers) and (state := leftovers()):  # for `runs repair`
            atomic_write_text(part.run_dir / SANDBOX_FILE, json.dumps(
                {**state, "backend": sandbox.kind}))
    return proc, agent_bar, t1


def supervise_agent(launch: AgentLaunch, proc: AgentProcess, progress: Progress,
                    agent_bar: TaskID, t1: float) -> None:
    """Wait for the agent to exit, the budget to end or its spend to reach --cost-limit; then
    no more submissions, and the record of how it stopped and what it spent."""
    config, console, graders = launch.config, launch.console, _graders(launch)
    sampler = ResourceSampler.for_agent(
        proc.proc.pid, launch.env.get("CUDA_VISIBLE_DEVICES"),
        memory_note=PODMAN_MEMORY if launch.sandbox.kind == "podman" else None).start()
    watch = None
    if config.cost_limit_usd is not None:
        watch = CostWatch(launch.agent, launch.agent_dir, config.cost_limit_usd,
                          pricing_model(config, launch.agent))
        if (note := unpriced_note(config, launch.agent)) is not None:
            console.print(f"[yellow]{safe(note)}[/]")
    terminated = False
    try:
        reason, code = proc.supervise(
            lambda: min(g.remaining() for g in graders), grace_s=config.grace_s,
            tick=lambda: progress.update(agent_bar, completed=graders[0].elapsed()),
            limit_reached=watch.reached if watch is not None else None)
    except HarnessTerminated:
        terminated = True
        for part in launch.parts:
            part.record.timings.agent_s = round(time.monotonic() - t1, 2)
            part.record.agent_exit_code = proc.proc.returncode
        raise
    finally:
        stopped = time.monotonic()
        samples = sampler.stop()
        proc.close()
        launch.sandbox.cleanup()
        for part in launch.parts:  # the agent is gone: its files can take them no more
            free_inodes(part.run_dir, INODE_RESERVE // 2)
        for ext in launch.extensions:  # each on its own: one failing loses no other's record
            _after_agent(launch, ext)
        if terminated:  # no time to parse the transcript: the GPUs, memory and time only
            _record_cost(launch, None, samples, stopped - t1)
    n_events = _write_agent_events(launch.agent, launch.agent_dir, console)
    _record_cost(launch, recorded_events(launch.agent_dir, n_events), samples, stopped - t1)
    for grader in graders:
        grader.stop_accepting()
    for part in launch.parts:
        for ext in launch.extensions:
            ext.submissions_closed(part)
    for part in launch.parts:
        part.record.agent_events = n_events
        part.record.timings.agent_s = round(stopped - t1, 2)
        part.record.exit_reason, part.record.agent_exit_code = reason, code
    progress.remove_task(agent_bar)
    console.print(f"agent stopped: {reason} (exit code {code})")
    if reason == "cost_limit" and watch is not None and watch.spent is not None:
        console.print(f"the agent's recorded spend (${watch.spent:.4f}) reached --cost-limit "
                      f"${config.cost_limit_usd:g}")
    _show_early_exit(launch, reason, code)


def _after_agent(launch: AgentLaunch, ext: RunExtension) -> None:
    """`ext.agent_exited`; a failure is shown and named in each part's record (run.json's
    error), never raised: the steps after it still write their records."""
    try:
        ext.agent_exited(launch)
    except Exception as exc:  # noqa: BLE001 - recorded below
        why = (f"the run directory's storage refused a write ({exc})" if storage_failure(exc)
               else f"{type(exc).__name__}: {exc}")
        launch.console.print(f"[yellow]{safe(ext.name)} failed when the agent exited "
                             f"({safe(why)})[/]")
        for part in launch.parts:
            part.record.error = "; ".join(x for x in (
                part.record.error, f"{ext.name}: its records of the agent were not written: "
                f"{why}") if x)


def _record_cost(launch: AgentLaunch, events: list[AgentEvent] | None,
                 samples: ResourceSamples, agent_s: float) -> None:
    """Each part's cost (the agent's share; the close adds the evaluations and the disk) and
    the driver model the provider reported. A multi run's parts each carry the whole agent."""
    try:
        cost, reported = agent_spend(launch.config, launch.agent, events, agent_s=agent_s,
                                     samples=samples)
    except Exception as exc:  # noqa: BLE001 - the cost is a diagnostic: never lose the run
        launch.console.print(f"[yellow]could not work out the agent's cost "
                             f"({type(exc).__name__}: {safe(exc)})[/]")
        return
    for part in launch.parts:
        part.record.cost = cost
        if part.record.provenance is not None:
            part.record.provenance.driver_model = reported


def _show_early_exit(launch: AgentLaunch, reason: str, code: int | None) -> None:
    from rich.text import Text

    console = launch.console
    hint = early_exit_hint(launch.agent_dir / "transcript.log", code,
                           launch.parts[0].record.timings.agent_s) \
        if reason == "agent_exited" else None
    for i, line in enumerate(hint or []):  # the transcript is the agent's text
        if i >= 2 and line.startswith("  "):  # its lines, marked as the agent's
            echo_agent_line(console, plain_text(line[2:]))
        else:
            console.print(Text(plain_text(line), style="yellow"), highlight=False)


def drain(launch: AgentLaunch) -> None:
    """Every evaluation accepted before the agent stopped runs to its end."""
    t2 = time.monotonic()
    for part in launch.parts:
        assert part.grader is not None
        if not part.grader.wait_idle(timeout=launch.config.eval_timeout_s + 60):
            launch.console.print(f"[yellow]an evaluation of {safe(part.task.name)} did not "
                                 "finish in time[/]")
        part.record.timings.drain_s = round(time.monotonic() - t2, 2)


def close_launch(launch: AgentLaunch) -> None:
    """On every path: the extensions release what the launch held, the sandbox is removed."""
    for ext in launch.extensions:
        ext.launch_closed(launch)
    launch.sandbox.cleanup()


def echo_agent_line(console: Console, text: str) -> None:
    """One line of the agent's output (already free of control characters) on the operator's
    console: every screen line it takes starts with AGENT_PREFIX, so no part of it can pass
    for a harness line (a long line is cut into pieces that each fit, never left to wrap)."""
    from rich.cells import chop_cells
    from rich.text import Text

    for piece in chop_cells(text, max(20, console.width - len(AGENT_PREFIX))) or [""]:
        console.print(Text(AGENT_PREFIX + piece, style="dim"), highlight=False, no_wrap=True,
                      overflow="crop", crop=True)


def print_notes(agent: Agent, console: Console) -> None:
    from rich.text import Text

    for note in getattr(agent, "notes", []):
        console.print(Text(plain_text(note), style="yellow"), highlight=False)


def _write_agent_events(agent: Agent, agent_dir: Path, console: Console) -> int | None:
    """agent/events.jsonl from the CLI's transcript; a parser failure never loses the run."""
    try:
        n = agent.write_events(agent_dir)
    except Exception as exc:
        console.print(f"[yellow]could not parse the agent's transcript into events "
                      f"({type(exc).__name__}: {safe(exc)})[/]")
        return None
    return n if (agent_dir / "events.jsonl").exists() else None

