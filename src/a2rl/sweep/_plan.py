"""`a2rl sweep plan MATRIX`: every cell a matrix expands to, before anything starts.

For each cell: its `a2rl run` command line, budget and resources, whether a sweep directory
already holds it finished, and the CLI and credentials its agent needs with whether they are
present here. Nothing is run, scored or written.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from a2rl._console import safe
from a2rl.sweep._matrix import CellSpec, Matrix, expand, run_config_fields
from a2rl.sweep._state import load_cells


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
        if value == defaults.get(name) or name in _NO_FLAG:
            continue  # the cell's run config carries it; `a2rl run` has no option for it
        flag = "--" + _FLAGS.get(name, name).replace("_", "-")
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


# Run-config fields a matrix may set that `a2rl run` takes no option for.
_NO_FLAG = frozenset({"exec_trace", "snapshot_every_s"})
# Run-config fields whose `a2rl run` option has another name.
_FLAGS = {"eval_timeout_s": "eval_timeout", "grace_s": "grace", "min_interval_s": "min_interval",
          "snapshot_every_s": "snapshot_every", "allow_hosts": "allow_host",
          "agent_dirs": "agent_dir"}


def _needs(spec: CellSpec) -> tuple[list[str], list[str]]:
    """What the cell's agent needs on the machine, and which of it is missing here."""
    from a2rl.agents import CLIAgent, get_agent, is_installed

    if spec.agent.startswith("cmd:"):
        return [], []
    agent = get_agent(spec.agent)
    if not isinstance(agent, CLIAgent):
        return [], []
    needs = [f"CLI {agent.package.spec}"]
    missing = [] if is_installed(agent.name, agent.package) else [f"CLI (a2rl agents install {agent.name})"]
    if not spec.driver_base_url:
        needs.append("one of " + ", ".join(agent.credentials))
        if not any(os.environ.get(k) for k in agent.credentials):
            missing.append(f"key ({' or '.join(agent.credentials)})")
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


def show_plan(matrix: Matrix, cells: list[PlannedCell], console: Console) -> None:
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
