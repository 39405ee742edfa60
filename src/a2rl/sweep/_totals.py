"""What a sweep will cost, before it starts: the totals `a2rl sweep plan` prints.

- GPU-hours: per cell, (resources.gpus + resources.eval_gpus) × its budget. Evaluation GPUs
  (`eval_gpus`) are held for the whole budget, so they are the evaluation allowance; without
  them the evaluations share the agent's GPUs and add nothing. The baseline (scored once per
  group) and the drain after the budget (at most `eval_timeout`) are not included.
- Wall time: the cells' budgets scheduled in matrix order on the cells the backend runs at once
  (the driver starts the next cell when one ends): the local pool's size, limited by this
  machine's GPUs; on Ray and Slurm `max_parallel` (default: every cell at once, so the wall time
  is the longest budget when the cluster holds them all).
- Dollars per stack: GPU dollars at a price per GPU-hour the user sets; LLM dollars from the
  recorded spend (`RunRecord.cost.usd`) per agent-hour of earlier runs of the same agent and
  driver in the sweep's runs folder, or unknown when there are none.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from a2rl.sweep._matrix import CellSpec, Matrix

DEFAULT_GPU_HOUR_USD = 2.0
"""The GPU price `sweep plan` assumes unless told (--gpu-hour-usd): US dollars per GPU-hour,
the order of an on-demand data-centre GPU in the cloud."""

StackKey = tuple[str, str | None, str | None]
"""(agent, driver, driver base URL): what an LLM spend rate is kept per."""


def pool_size(matrix: Matrix, n_cells: int, max_parallel: int | None = None) -> int:
    """Cells the driver keeps in flight: --max-parallel, else the matrix's `max_parallel`,
    else one at a time on the local backend and every cell on Ray and Slurm (their
    schedulers queue what does not fit)."""
    return max_parallel or matrix.max_parallel or (1 if matrix.backend == "local"
                                                   else max(1, n_cells))


def stack_label(spec: CellSpec) -> str:
    """The cell's stack as the leaderboard names it: agent · driver (+ scaffold arm)."""
    label = f"{spec.agent_label} · {spec.driver_label}" if spec.driver else spec.agent_label
    return f"{label} + {spec.scaffold}" if spec.scaffold else label


def cell_gpus(spec: CellSpec) -> float:
    return spec.resources.gpus + spec.resources.eval_gpus


def makespan(budgets_h: Iterable[float], slots: int) -> float:
    """Hours until the last cell ends when each starts, in order, on the first free slot."""
    free = [0.0] * max(1, slots)
    end = 0.0
    for hours in budgets_h:
        start = heapq.heappop(free)
        end = max(end, start + hours)
        heapq.heappush(free, start + hours)
    return end


@dataclass(frozen=True)
class SpendRate:
    """LLM dollars per agent-hour of one stack, from earlier runs."""

    usd: float
    agent_hours: float
    runs: int

    @property
    def per_hour(self) -> float:
        return self.usd / self.agent_hours


def spend_rates(runs_dir: Path | None) -> dict[StackKey, SpendRate]:
    """Recorded LLM spend per agent-hour of each (agent, driver, endpoint) in `runs_dir`
    (runs/<task>/<run_id>/run.json); runs without a recorded spend or agent time are left out,
    and so is any record that cannot be read."""
    from a2rl.schema import RunRecord

    sums: dict[StackKey, list[float]] = {}
    if runs_dir is None or not runs_dir.is_dir():
        return {}
    for path in sorted(runs_dir.glob("*/*/run.json")):
        try:
            record = RunRecord.model_validate_json(path.read_text())
        except (OSError, ValueError):
            continue
        usd = record.cost.usd if record.cost is not None else None
        hours = record.timings.agent_s / 3600
        if usd is None or usd < 0 or hours <= 0:
            continue
        c = record.config
        acc = sums.setdefault((c.agent, c.driver, c.driver_base_url), [0.0, 0.0, 0])
        acc[0] += usd
        acc[1] += hours
        acc[2] += 1
    return {k: SpendRate(v[0], v[1], int(v[2])) for k, v in sums.items()}


@dataclass(frozen=True)
class StackTotals:
    stack: str
    cells: int
    agent_hours: float
    """Sum of the cells' budgets."""
    gpu_hours: float
    gpu_usd: float
    rate: SpendRate | None
    """The stack's recorded LLM spend per agent-hour (None: no earlier run recorded one)."""

    @property
    def llm_usd(self) -> float | None:
        return None if self.rate is None else self.rate.per_hour * self.agent_hours


@dataclass(frozen=True)
class Totals:
    cells: int
    gpu_hours: float
    eval_gpu_hours: float
    """The part of `gpu_hours` held for evaluations (resources.eval_gpus)."""
    slots: int
    """Cells at once (0: none can start on this machine)."""
    parallelism: str
    """Where `slots` comes from, in words (the backend and its setting)."""
    wall_hours: float | None
    """None: no cell can start on this machine."""
    gpu_hour_usd: float
    stacks: list[StackTotals]


def totals(matrix: Matrix, specs: list[CellSpec], *, runs_dir: Path | None,
           gpu_hour_usd: float = DEFAULT_GPU_HOUR_USD, max_parallel: int | None = None
           ) -> Totals:
    """The totals of running `specs` (the cells still to run) on the matrix's backend."""
    from a2rl.sweep._cell import local_gpus

    parallel = pool_size(matrix, len(specs), max_parallel)
    slots, how = parallel, matrix.backend + (
        ": max_parallel" if max_parallel or matrix.max_parallel else
        ": one at a time by default" if matrix.backend == "local" else
        ": every cell submitted; the cluster's free GPUs may run fewer at once")
    devices = max((s.resources.devices for s in specs), default=0)
    if matrix.backend == "local" and devices:
        have = len(local_gpus())
        slots = min(parallel, have // devices)
        how = f"local: pool of {parallel}, {have} GPU(s) here, {devices} per cell"
    rates = spend_rates(runs_dir)
    by_stack: dict[str, list[CellSpec]] = {}
    for spec in specs:
        by_stack.setdefault(stack_label(spec), []).append(spec)
    stacks = []
    for label, cells in by_stack.items():
        gpu_h = sum(cell_gpus(s) * s.budget_s / 3600 for s in cells)
        first = cells[0]
        stacks.append(StackTotals(
            stack=label, cells=len(cells), agent_hours=sum(s.budget_s / 3600 for s in cells),
            gpu_hours=gpu_h, gpu_usd=gpu_h * gpu_hour_usd,
            rate=rates.get((first.agent, first.driver, first.driver_base_url))))
    return Totals(
        cells=len(specs), gpu_hours=sum(s.gpu_hours for s in stacks),
        eval_gpu_hours=sum(s.resources.eval_gpus * s.budget_s / 3600 for s in specs),
        slots=slots, parallelism=how,
        wall_hours=makespan((s.budget_s / 3600 for s in specs), slots) if slots else None,
        gpu_hour_usd=gpu_hour_usd, stacks=stacks)
