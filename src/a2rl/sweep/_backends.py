"""Where jobs run: a thread pool here, Ray tasks, or Slurm jobs through submitit.

Each backend only submits `execute_job` with the cell's resources and reports which jobs ended;
queuing and placement are the engine's (Ray's scheduler, Slurm's), retries the driver's.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import shutil
import time
from pathlib import Path
from typing import Any, Protocol

from a2rl._errors import A2RLError
from a2rl.sweep._cell import Job, JobResult, execute_job, local_gpus, stop_job
from a2rl.sweep._matrix import Matrix


def execute_job_json(job_json: str) -> str:
    """`execute_job` on JSON (what crosses to Ray workers and Slurm jobs: plain strings)."""
    return execute_job(Job.model_validate_json(job_json)).model_dump_json()


class Backend(Protocol):
    name: str

    def submit(self, job: Job) -> Any: ...

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        """The handles among `handles` that ended (waiting at most `timeout` s for one)."""

    def result(self, handle: Any) -> JobResult:
        """The job's result; raises when the engine lost it (a dead worker or node)."""

    def job_id(self, handle: Any) -> str | None: ...

    def close(self) -> None: ...


class LocalBackend:
    """A pool on this machine; GPUs are handed to cells whole, in turn."""

    name = "local"

    def __init__(self, max_parallel: int) -> None:
        self.pool = cf.ThreadPoolExecutor(max_workers=max_parallel,
                                          thread_name_prefix="a2rl-sweep")
        self.free_gpus = local_gpus()
        self._gpus: dict[cf.Future[JobResult], list[str]] = {}
        self._jobs: dict[cf.Future[JobResult], Job] = {}

    def can_start(self, job: Job) -> bool:
        return len(self.free_gpus) >= job.spec.resources.devices

    def submit(self, job: Job) -> cf.Future[JobResult]:
        n = job.spec.resources.devices
        taken, self.free_gpus = self.free_gpus[:n], self.free_gpus[n:]
        if n:
            job = job.model_copy(update={"cuda_visible_devices": ",".join(taken)})
        future = self.pool.submit(execute_job, job)
        self._gpus[future] = taken
        self._jobs[future] = job
        return future

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        done, _ = cf.wait(handles, timeout=timeout, return_when=cf.FIRST_COMPLETED)
        for future in done:
            self.free_gpus += self._gpus.pop(future, [])
            self._jobs.pop(future, None)
        return list(done)

    def cancel(self, handle: Any) -> None:
        """A queued job is dropped; a running one's cell process gets SIGTERM (its run closes
        as `terminated`), so that `close` does not wait for it to run to its budget."""
        job = self._jobs.get(handle)
        if not handle.cancel() and job is not None:
            stop_job(job)

    def result(self, handle: Any) -> JobResult:
        result: JobResult = handle.result()
        return result

    def job_id(self, handle: Any) -> str | None:
        return None

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class RayBackend:
    """Ray tasks with the cell's num_cpus/num_gpus/memory; a cluster via ray.init(address)."""

    name = "ray"

    def __init__(self, matrix: Matrix) -> None:
        try:
            import ray
        except ImportError as exc:
            raise A2RLError("backend ray needs Ray", "pip install 'a2rl-bench[sweep]' (or ray)") from exc
        self.ray = ray
        self.started = False
        opts = matrix.ray
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if opts.address:
                kwargs["address"] = opts.address
            else:
                kwargs.update(num_cpus=opts.num_cpus, num_gpus=opts.num_gpus)
            ray.init(**kwargs)
            self.started = True
        self.remote = ray.remote(execute_job_json)
        self.runtime_env = opts.runtime_env

    def can_start(self, job: Job) -> bool:
        return True  # Ray queues a task until a node has its resources

    def submit(self, job: Job) -> Any:
        r = job.spec.resources
        options: dict[str, Any] = {"num_cpus": r.cpus, "num_gpus": r.gpus + r.eval_gpus,
                                   "max_retries": 0}
        if r.mem_gb:
            options["memory"] = int(r.mem_gb * 1024**3)
        if self.runtime_env:
            options["runtime_env"] = self.runtime_env
        return self.remote.options(**options).remote(job.model_dump_json())

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        done, _ = self.ray.wait(handles, num_returns=1, timeout=timeout)
        return list(done)

    def result(self, handle: Any) -> JobResult:
        return JobResult.model_validate_json(self.ray.get(handle))

    def job_id(self, handle: Any) -> str | None:
        return str(handle.task_id().hex())

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


class SlurmBackend:
    """One Slurm job per cell through submitit (cluster `local`: submitit's local executor)."""

    name = "slurm"

    def __init__(self, matrix: Matrix, folder: Path) -> None:
        try:
            import submitit
        except ImportError as exc:
            raise A2RLError("backend slurm needs submitit",
                            "pip install 'a2rl-bench[sweep]' (or submitit)") from exc
        self.submitit = submitit
        self.opts = matrix.slurm
        if self.opts.cluster == "slurm" and shutil.which("sbatch") is None:
            raise A2RLError("backend slurm: sbatch is not on PATH",
                            "run `a2rl sweep` on a Slurm login node, or use backend local/ray "
                            "(slurm.cluster: local runs the same jobs here through submitit)")
        self.folder = folder
        self.poll_s = 1.0 if self.opts.cluster == "local" else 15.0

    def can_start(self, job: Job) -> bool:
        return True  # Slurm queues the job

    def _executor(self, job: Job) -> Any:
        r, o = job.spec.resources, self.opts
        executor = self.submitit.AutoExecutor(folder=self.folder / "%j", cluster=o.cluster)
        limit = o.time or (job.spec.budget_s + 2 * job.spec.run.eval_timeout + 1800)
        params = slurm_parameters(o, name=f"a2rl-{job.key}", limit_s=limit, cpus=r.cpus,
                                  mem_gb=r.mem_gb)
        params.update(gpus_per_node=r.devices, slurm_constraint=o.constraint,
                      slurm_additional_parameters=o.additional or None)
        executor.update_parameters(**params)
        return executor

    def submit(self, job: Job) -> Any:
        return self._executor(job).submit(execute_job_json, job.model_dump_json())

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        deadline = time.monotonic() + timeout
        while True:
            done = [h for h in handles if h.done()]
            if done or time.monotonic() >= deadline:
                return done
            time.sleep(min(self.poll_s, max(0.0, deadline - time.monotonic())))

    def result(self, handle: Any) -> JobResult:
        return JobResult.model_validate_json(handle.result())

    def job_id(self, handle: Any) -> str | None:
        return str(handle.job_id)

    def close(self) -> None:
        return None


def slurm_parameters(o: Any, *, name: str, limit_s: float, cpus: float,
                     mem_gb: float | None) -> dict[str, Any]:
    """submitit parameters every a2rl Slurm job shares (a cell's, the sweep driver's): the
    matrix's partition, account, QoS and setup lines, one task on one node, the time limit,
    and time between SIGTERM and SIGKILL (a2rl closes its records on SIGTERM; submitit's
    requeue signal is USR2)."""
    params: dict[str, Any] = {
        "timeout_min": max(1, math.ceil(limit_s / 60)), "name": name,
        "cpus_per_task": max(1, math.ceil(cpus)), "nodes": 1, "tasks_per_node": 1,
        "slurm_partition": o.partition, "slurm_account": o.account, "slurm_qos": o.qos,
        "slurm_setup": o.setup or None, "slurm_signal_delay_s": 120,
    }
    if mem_gb:
        params["mem_gb"] = math.ceil(mem_gb)
    return params


def make_backend(matrix: Matrix, sweep_dir: Path, max_parallel: int) -> Any:
    if matrix.backend == "local":
        return LocalBackend(max_parallel)
    if matrix.backend == "ray":
        return RayBackend(matrix)
    return SlurmBackend(matrix, sweep_dir / "slurm")
