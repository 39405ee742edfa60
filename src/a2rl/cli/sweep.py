"""`a2rl sweep`: run or resume a matrix of cells; `a2rl sweep plan` lists its cells, `a2rl sweep
status` shows their states. a2rl.cli registers the command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from a2rl.cli._options import _tracking


def sweep(
    target: Annotated[list[str], typer.Argument(
        help="MATRIX.yaml to run or resume, `plan MATRIX.yaml` to list its cells without "
             "starting any, or `status DIR` to show a sweep's cells.")],
    dir: Annotated[Path | None, typer.Option("--dir", help="Sweep directory (default "
                                             "sweeps/<name>); runs go to DIR/runs.")] = None,
    backend: Annotated[str | None, typer.Option(help="local, ray or slurm (overrides the "
                                                "matrix's).")] = None,
    max_parallel: Annotated[int | None, typer.Option(help="Cells in flight at once.")] = None,
    retry_failed: Annotated[bool, typer.Option(help="Give failed cells new attempts.")] = False,
    skip_unready: Annotated[bool, typer.Option(
        "--skip-unready", help="Start the cells that can run here and leave the others "
                               "(a missing CLI, key or option) pending; without it such a "
                               "cell stops the sweep before anything starts.")] = False,
    gpu_hour_usd: Annotated[float | None, typer.Option(
        "--gpu-hour-usd", help="`plan`: the GPU price in US dollars per GPU-hour for the "
                               "cost estimate (default 2.00).")] = None,
    log_to: Annotated[str | None, typer.Option(help="Log each run to wandb or mlflow.")] = None,
    as_job: Annotated[bool, typer.Option(
        "--as-job", help="Submit the driver itself as a Slurm job (submitit; slurm.cluster: "
                         "local runs it as a local job) so it outlives this terminal; "
                         "rerunning resumes.")] = False,
) -> None:
    """Run a matrix of cells (tasks × agents × drivers × modes × models × repeats) on a local
    pool, Ray or Slurm; `a2rl sweep status DIR` shows each cell's state. Rerunning resumes."""
    from a2rl._console import make_console
    from a2rl._errors import A2RLError
    from a2rl.sweep import load_matrix, run_sweep, show_status

    if target[0] == "status":
        if len(target) != 2:
            raise A2RLError("`a2rl sweep status` takes one sweep directory",
                            "a2rl sweep status sweeps/NAME")
        show_status(Path(target[1]), make_console())
        return
    if target[0] == "plan":
        if len(target) != 2:
            raise A2RLError("`a2rl sweep plan` takes one matrix file",
                            "a2rl sweep plan examples/sweeps/slurm.yaml [--dir SWEEP_DIR]")
        from a2rl.sweep import DEFAULT_GPU_HOUR_USD, plan, plan_totals, show_plan

        planned = load_matrix(Path(target[1]))
        price = DEFAULT_GPU_HOUR_USD if gpu_hour_usd is None else gpu_hour_usd
        if price < 0:
            raise A2RLError(f"--gpu-hour-usd must not be negative (got {price})",
                            "pass your price per GPU-hour, e.g. --gpu-hour-usd 2.5")
        sweep_dir = dir or Path("sweeps") / (planned.name or "sweep")
        cells = plan(planned, sweep_dir)
        todo = [c.spec for c in cells if c.state != "finished"]
        show_plan(planned, cells, make_console(), plan_totals(
            planned, todo, runs_dir=sweep_dir / "runs", gpu_hour_usd=price,
            max_parallel=max_parallel))
        return
    if gpu_hour_usd is not None:
        raise A2RLError("--gpu-hour-usd is an option of `a2rl sweep plan`",
                        "a2rl sweep plan MATRIX.yaml --gpu-hour-usd 2.5")
    if len(target) != 1:
        raise A2RLError(f"a2rl sweep takes one matrix file (got {len(target)} arguments)",
                        "a2rl sweep examples/sweeps/local.yaml")
    if as_job:
        if backend is not None or log_to is not None:
            raise A2RLError("--as-job reads everything from the matrix file",
                            "put backend: and log: in the matrix instead of --backend/--log-to")
        from a2rl.sweep import submit_driver

        planned = load_matrix(Path(target[0]))
        job = submit_driver(Path(target[0]), dir or Path("sweeps") / (planned.name or "sweep"),
                            max_parallel=max_parallel, retry_failed=retry_failed,
                            skip_unready=skip_unready)
        make_console().print(f"submitted the sweep driver as job {job.job_id}; "
                             f"`a2rl sweep status` shows its cells")
        return
    matrix = load_matrix(Path(target[0]))
    if backend is not None:
        if backend not in ("local", "ray", "slurm"):
            raise A2RLError(f"unknown --backend {backend!r}", "use local, ray or slurm")
        matrix.backend = backend  # type: ignore[assignment]
    if log_to is not None:
        if log_to not in ("wandb", "mlflow"):
            raise A2RLError(f"unknown --log-to {log_to!r}", "use wandb or mlflow")
        matrix.log = _tracking(log_to, group=matrix.name)  # the sweep's runs chart together
    elif matrix.log is not None:
        from a2rl.extensions.tracking import check_tracking

        check_tracking(matrix.log)
    summary = run_sweep(matrix, dir or Path("sweeps") / (matrix.name or "sweep"),
                        max_parallel=max_parallel, retry_failed=retry_failed,
                        skip_unready=skip_unready)
    if summary.failed:
        raise typer.Exit(1)
