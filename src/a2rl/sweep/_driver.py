"""The sweep driver as a job of its own (`a2rl sweep MATRIX --as-job`).

A driver started on a login node stops with its terminal (SIGHUP) and with the node's
session limits. Submitted through submitit it runs as a Slurm job (or, with
`slurm.cluster: local`, as submitit's local job on this machine): the same `run_sweep`, with
the same lock, state files and resume. It is resumable as any driver is: when it is cancelled,
killed or reaches its time limit, the cells it left in flight are closed as interrupted by the
next driver, which retries them and skips every finished cell. `driver.json` in the sweep
directory records the job (id, cluster, log folder) for `a2rl sweep status` and for the user.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from a2rl._errors import A2RLError
from a2rl._util import atomic_write_text, utcnow
from a2rl.sweep._backends import slurm_parameters
from a2rl.sweep._matrix import load_matrix

DEFAULT_DRIVER_TIME_S = 3 * 24 * 3600


def drive_sweep(matrix_path: str, sweep_dir: str, max_parallel: int | None,
                retry_failed: bool, skip_unready: bool = False) -> dict[str, int]:
    """The driver job's body: load the matrix and run (or resume) the sweep to its end."""
    from a2rl._console import make_console
    from a2rl.sweep._sweep import run_sweep

    matrix = load_matrix(Path(matrix_path))
    summary = run_sweep(matrix, Path(sweep_dir), console=make_console(),
                        max_parallel=max_parallel, retry_failed=retry_failed,
                        skip_unready=skip_unready)
    return {"cells": summary.cells, "finished": summary.finished, "failed": summary.failed,
            "skipped": summary.skipped}


def submit_driver(matrix_path: Path, sweep_dir: Path, *, max_parallel: int | None = None,
                  retry_failed: bool = False, skip_unready: bool = False) -> Any:
    """Submit the driver of `matrix_path` as a job on the matrix's Slurm settings (partition,
    account, qos, setup lines, `driver_time`/`driver_cpus`/`driver_mem_gb`); returns the
    submitit job. The matrix's own backend (local, ray, slurm) is what the driver then uses
    for the cells. The cells' checks run here first, so that a cell the driver would refuse
    stops the submission (unless `skip_unready`)."""
    from a2rl.sweep._sweep import check_cells_ready

    try:
        import submitit
    except ImportError as exc:
        raise A2RLError("--as-job needs submitit", "pip install 'a2rl-bench[sweep]' (or "
                        "submitit)") from exc
    matrix = load_matrix(matrix_path)
    check_cells_ready(matrix, sweep_dir, retry_failed=retry_failed, skip_unready=skip_unready)
    o = matrix.slurm
    if o.cluster == "slurm" and shutil.which("sbatch") is None:
        raise A2RLError("--as-job submits the driver to Slurm, but sbatch is not on PATH",
                        "run it on a Slurm login node (or set slurm.cluster: local to run the "
                        "driver as a local job on this machine)")
    sweep_dir = sweep_dir.absolute()
    sweep_dir.mkdir(parents=True, exist_ok=True)
    folder = sweep_dir / "driver"
    executor = submitit.AutoExecutor(folder=folder / "%j", cluster=o.cluster)
    executor.update_parameters(**slurm_parameters(
        o, name=f"a2rl-sweep-{matrix.name}", limit_s=o.driver_time or DEFAULT_DRIVER_TIME_S,
        cpus=o.driver_cpus, mem_gb=o.driver_mem_gb))
    job = executor.submit(drive_sweep, str(matrix_path.absolute()), str(sweep_dir),
                          max_parallel, retry_failed, skip_unready)
    atomic_write_text(sweep_dir / "driver.json", json.dumps({
        "job_id": str(job.job_id), "cluster": o.cluster, "matrix": str(matrix_path.absolute()),
        "submitted_at": utcnow().isoformat(), "logs": str(folder / str(job.job_id))},
        indent=2))
    return job
