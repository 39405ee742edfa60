"""`a2rl sweep plan MATRIX`: every cell a matrix expands to, before anything starts.

For each cell: its `a2rl run` command line, budget and resources, whether a sweep directory
already holds it finished, and the CLI and credentials its agent needs with what `a2rl run`
would refuse here (`Agent.check`: the same check the sweep runs before it starts a cell). Then
the totals of the cells to run (`_totals`). Nothing is run, scored or written.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from a2rl._console import safe
from a2rl._errors import A2RLError
from a2rl.sweep._matrix import RUN_OPTIONS, CellSpec, Matrix, expand, run_config_fields
from a2rl.sweep._state import load_cells
from a2rl.sweep._totals import Totals


@dataclass(frozen=True)
class PlannedCell:
    """One cell of the plan."""

    spec: CellSpec
    command: str
    state: str
    needs: list[str]
    missing: list[str]


def _command(spec: CellSpec) -> str:
    argv = ["a2rl", "run", "--task", spec.task, "--agent", spec.agent, "--model", spec.model,
            "--mode", spec.mode, "--budget", f"{spec.budget_s:.0f}s"]
    for key, value in sorted(spec.task_options.items()):
        argv += ["--task-opt", f"{key}={value}"]
    for key, value in sorted(spec.agent_options.items()):
        argv += ["--agent-opt", f"{key}={value}"]
    if spec.driver:
        argv += ["--driver", spec.driver]
    if spec.driver_base_url:
        argv += ["--driver-base-url", spec.driver_base_url]
    if spec.scaffold:
        argv += ["--scaffold", spec.scaffold]
    defaults = run_config_fields(type(spec.run)())
    for name, value in run_config_fields(spec.run).items():
        if value == defaults.get(name):
            continue
        flag = RUN_OPTIONS[name][1].flag
        if name == "extensions":
            for ext, options in sorted(value.items()):
                pairs = ",".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}"
                                 for k, v in sorted(options.items()))
                argv += ["--extension", f"{ext}:{pairs}" if pairs else ext]
        elif isinstance(value, bool):
            argv.append(flag if value else "--no-" + flag[2:])
        elif isinstance(value, list):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv.append(f"{flag}={value}")
    return shlex.join(argv)


def cell_problems(spec: CellSpec) -> list[A2RLError]:
    """What `a2rl run` would refuse about the cell's agent on this machine (its
    `Agent.setup_problems`: options, driver, CLI, credentials); empty when it can start."""
    from a2rl.agents import get_agent
    from a2rl.sweep._cell import _config

    return get_agent(spec.agent).setup_problems(_config(spec, Path("runs")))


def _needs(spec: CellSpec) -> tuple[list[str], list[str]]:
    """What the cell's agent needs on the machine, and what `a2rl run` would refuse here."""
    from a2rl.agents import CLIAgent, get_agent

    missing = [p.message for p in cell_problems(spec)]
    agent = get_agent(spec.agent)
    if not isinstance(agent, CLIAgent):
        return [], missing
    needs = [f"CLI {agent.package.spec}"]
    if not spec.driver_base_url:
        needs.append("one of " + ", ".join(agent.credentials))
    return needs, missing


def plan(matrix: Matrix, sweep_dir: Path | None) -> list[PlannedCell]:
    """The cells of `matrix` (refused pairs raise before any is listed), with their state in
    `sweep_dir` when it exists."""
    cells = expand(matrix, matrix.study or (matrix.name or "sweep"))
    states = {c.id: c.status for c in load_cells(sweep_dir)} \
        if sweep_dir is not None and sweep_dir.is_dir() else {}
    out = []
    for spec in cells:
        needs, missing = _needs(spec)
        out.append(PlannedCell(spec, _command(spec), states.get(spec.id, "to run"), needs, missing))
    return out


def show_plan(matrix: Matrix, cells: list[PlannedCell], console: Console,
              totals: Totals | None = None) -> None:
    table = Table(title=f"{safe(matrix.name or 'sweep')}: {len(cells)} cells on {matrix.backend}")
    for col in ("cell", "state", "budget", "resources", "command", "needs", "missing here"):
        table.add_column(col, overflow="fold")
    for c in cells:
        r = c.spec.resources
        res = (f"{r.gpus:g} GPU" + (f" + {r.eval_gpus:g} eval GPU" if r.eval_gpus else "")
               + f", {r.cpus:g} CPU" + (f", {r.mem_gb:g} GB" if r.mem_gb else ""))
        table.add_row(c.spec.id, c.state, f"{c.spec.budget_s / 3600:.2f} h", res,
                      safe(c.command), safe("; ".join(c.needs) or "-"),
                      safe("; ".join(c.missing) or "-"))
    console.print(table)
    todo = sum(c.state != "finished" for c in cells)
    short = sum(bool(c.missing) for c in cells)
    console.print(f"{todo} of {len(cells)} cells to run; {short} miss something on this machine",
                  highlight=False)
    if totals is not None:
        show_totals(totals, console)


def show_totals(t: Totals, console: Console) -> None:
    """The totals of the cells to run, each with how it was estimated."""
    say = console.print
    allowance = (f", of which {t.eval_gpu_hours:,.1f} for evaluation GPUs (resources.eval_gpus, "
                 "held for the whole budget)" if t.eval_gpu_hours else
                 "; no evaluation allowance: evaluations share the agent's GPUs")
    say(f"totals for {t.cells} cell(s) to run: {t.gpu_hours:,.1f} GPU-hours = GPUs per cell × "
        f"budget{allowance}; baselines and the drain after each budget not included",
        highlight=False, markup=False)
    if t.wall_hours is None:
        say(f"wall time: none, no cell can start on this machine ({t.parallelism})",
            highlight=False, markup=False)
    else:
        say(f"wall time: {t.wall_hours:,.1f} h at {t.slots} cell(s) at once ({t.parallelism})",
            highlight=False, markup=False)
    table = Table(title=f"estimated dollars per stack (GPU at ${t.gpu_hour_usd:,.2f} per "
                        "GPU-hour, --gpu-hour-usd)")
    for col in ("stack", "cells", "agent-hours", "GPU-hours", "GPU $", "LLM $"):
        table.add_column(col, overflow="fold")
    for s in t.stacks:
        llm = ("unknown: no earlier run of this stack recorded its spend" if s.rate is None
               else f"{s.llm_usd:,.2f} (${s.rate.per_hour:,.2f}/agent-hour over "
                    f"{s.rate.runs} earlier run(s))")
        table.add_row(safe(s.stack), str(s.cells), f"{s.agent_hours:,.1f}",
                      f"{s.gpu_hours:,.1f}", f"{s.gpu_usd:,.2f}", llm)
    known = [s.llm_usd for s in t.stacks if s.llm_usd is not None]
    unknown = len(t.stacks) - len(known)
    table.add_section()
    table.add_row("all", str(t.cells), f"{sum(s.agent_hours for s in t.stacks):,.1f}",
                  f"{t.gpu_hours:,.1f}", f"{sum(s.gpu_usd for s in t.stacks):,.2f}",
                  "unknown" if not known else f"{sum(known):,.2f}" + (
                      f" + unknown for {unknown} stack(s)" if unknown else ""))
    console.print(table)
