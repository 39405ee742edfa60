"""Many runs: a matrix of cells on a local pool, Ray or Slurm, sharing one study (held-out
seeds, grader key) and one baseline per (task, model, study)."""

from a2rl.sweep._driver import submit_driver
from a2rl.sweep._matrix import CellSpec, Matrix, cell_id, expand, load_matrix, parse_matrix
from a2rl.sweep._plan import plan, show_plan
from a2rl.sweep._state import CellState, load_cells
from a2rl.sweep._status import show_status
from a2rl.sweep._study import Study, create_study, find_study, join_study
from a2rl.sweep._sweep import SweepSummary, run_sweep
from a2rl.sweep._totals import DEFAULT_GPU_HOUR_USD, Totals
from a2rl.sweep._totals import totals as plan_totals

__all__ = [
    "DEFAULT_GPU_HOUR_USD", "CellSpec", "CellState", "Matrix", "Study", "SweepSummary", "Totals",
    "cell_id", "create_study", "expand", "find_study", "join_study", "load_cells", "load_matrix",
    "parse_matrix", "plan", "plan_totals", "run_sweep", "show_plan", "show_status",
    "submit_driver",
]
