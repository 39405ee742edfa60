"""What a run spent (`RunRecord.cost`): the agent's LLM tokens and dollars, GPU-hours (the
agent's and the evaluations'), GPU use and memory sampled while the agent runs, the peak memory
of the agent's processes and the run folder's size at the close.

Dollars: the CLI's own figures where it reports them (`usd_source` `cli`); tokens it has not
priced yet (the responses of a round cut off before its result, or a CLI that reports no cost)
are priced with the dated table of `a2rl.schema.PRICES` (`prices:<date>`, or `cli+prices:<date>`
for a mix). Nothing is priced from a guess: a model the table lacks leaves those dollars unknown.

Samples (`ResourceSampler`, a daemon thread): GPU utilisation and memory through NVML
(`pynvml`, from nvidia-ml-py, when importable), else `nvidia-smi --query-gpu` when it is on PATH,
else none (`gpu_note` says so); the agent's peak memory from its sandbox's cgroup (`memory.peak`)
when it has one of its own, else the summed resident memory of its process tree at each sample.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a2rl._util import descendants
from a2rl._walk import fwalk
from a2rl.schema import (
    PRICES_DATE,
    AgentEvent,
    EngineInfo,
    RunCost,
    RunRecord,
    SubmissionRecord,
    price_for,
)

SAMPLE_EVERY_S = 5.0
"""Seconds between two samples of GPU use and memory."""
MODEL_CAP = 200
"""Most characters of a reported model id kept."""
NO_NVML = "no NVML on this machine: GPU use not sampled"
NO_GPU = "no GPU visible to the agent: GPU use not sampled"
_CACHED_KEYS = ("cache_read_input_tokens", "cached_input_tokens", "cached_tokens", "cache_read",
                "cache_read_tokens")
"""Where each parser puts the cached part of a usage event's prompt (Claude Code, Codex,
Gemini CLI, OpenCode, OpenHands)."""


# ---- LLM tokens and dollars ------------------------------------------------------------------
@dataclass(frozen=True)
class UnpricedTail:
    """Tokens after the last usage event that carried the CLI's dollars (all of them when the
    CLI reports no dollars): the CLI's figures do not cover these."""

    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0


def _cached(event: AgentEvent) -> int:
    for key in _CACHED_KEYS:
        value = event.extra.get(key)
        if value is not None:
            try:
                return max(0, int(value))
            except ValueError:
                return 0
    return 0


def unpriced_tail(events: Iterable[AgentEvent]) -> UnpricedTail:
    """The usage the CLI has not priced (yet). A CLI that prices per round (Claude Code's
    result) puts the round's dollars after its responses: those of a round cut off before its
    result, or of the round still going, come after the last priced event."""
    tokens_in = cached = tokens_out = 0
    for event in events:
        if event.kind != "usage":
            continue
        if event.cost_usd is not None:
            tokens_in = cached = tokens_out = 0
            continue
        tokens_in += event.input_tokens or 0
        cached += _cached(event)
        tokens_out += event.output_tokens or 0
    return UnpricedTail(tokens_in, cached, tokens_out)


def llm_spend(cli_usd: float | None, tail: UnpricedTail,
              model: str | None) -> tuple[float | None, str | None]:
    """(dollars, where from): the CLI's own dollars, plus the unpriced tail at `model`'s list
    price."""
    price = price_for(model)
    priced = price.usd(tail.input_tokens, tail.output_tokens, tail.cached_tokens) \
        if price is not None else None
    if cli_usd is None:
        if priced is None:
            return None, None
        return round(priced, 6), f"prices:{PRICES_DATE}"
    if not tail.input_tokens + tail.output_tokens:
        return round(cli_usd, 6), "cli"
    if priced is None:  # the CLI's dollars stop short of its last responses
        return round(cli_usd, 6), "cli (last responses unpriced)"
    return round(cli_usd + priced, 6), f"cli+prices:{PRICES_DATE}"


def driver_model(events: Iterable[AgentEvent]) -> str | None:
    """The driver's model id as the provider reported it: the most frequent `model` the parser
    kept from the responses (Claude Code's turns, OpenHands' usage), else a result's single
    model (Gemini CLI's stats). The transcript is the CLI's text: printable characters only,
    at most MODEL_CAP of them."""
    counts: dict[str, int] = {}
    for event in events:
        name = event.extra.get("model") or ""
        if not name and event.kind == "usage" and "," not in event.extra.get("models", ","):
            name = event.extra.get("models", "")
        name = "".join(ch for ch in name if ch.isprintable()).strip()[:MODEL_CAP]
        if name:
            counts[name] = counts.get(name, 0) + 1
    return max(counts, key=lambda k: counts[k]) if counts else None


# ---- GPUs ------------------------------------------------------------------------------------
def gpu_devices(dev: Path = Path("/dev")) -> int:
    """NVIDIA GPUs this machine exposes (/dev/nvidia0, /dev/nvidia1, …)."""
    return sum(1 for p in dev.glob("nvidia*") if p.name[len("nvidia"):].isdigit())


def visible_gpus(cuda_visible: str | None, dev: Path = Path("/dev")) -> int:
    """GPUs a process sees: its CUDA_VISIBLE_DEVICES entries (None: every device), never more
    than the machine has ("" and "-1" hide them all)."""
    present = gpu_devices(dev)
    if cuda_visible is None:
        return present
    entries = [e.strip() for e in cuda_visible.split(",") if e.strip()]
    if not entries or entries[0] == "-1":
        return 0
    return min(len(entries), present)


def gpu_hours(gpus: int, seconds: float) -> float:
    return round(max(0, gpus) * max(0.0, seconds) / 3600.0, 6)


def eval_gpu_hours(submissions: Sequence[SubmissionRecord], gpus: int) -> float:
    """GPU time of the evaluations that ran (cached ones took none; the baseline is not
    counted): their wall time × the GPUs of the evaluation child."""
    seconds = sum(s.eval_seconds or 0.0 for s in submissions if not s.cached)
    return gpu_hours(gpus, seconds)


def _gpu_indices(cuda_visible: str | None) -> list[int] | None:
    """NVML indices of the agent's GPUs (None: all, or entries that are not plain indices)."""
    if cuda_visible is None:
        return None
    entries = [e.strip() for e in cuda_visible.split(",") if e.strip()]
    return [int(e) for e in entries] if all(e.isdigit() for e in entries) else None


class _NvmlReader:
    """(utilisation %, memory used MiB) per GPU through pynvml."""

    def __init__(self, indices: list[int] | None) -> None:
        import pynvml  # type: ignore[import-not-found, import-untyped, unused-ignore]

        pynvml.nvmlInit()
        self._nvml: Any = pynvml
        count = pynvml.nvmlDeviceGetCount()
        chosen = range(count) if indices is None else [i for i in indices if i < count]
        self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in chosen]

    def read(self) -> list[tuple[float, float]]:
        out = []
        for handle in self._handles:
            util = self._nvml.nvmlDeviceGetUtilizationRates(handle)
            mem = self._nvml.nvmlDeviceGetMemoryInfo(handle)
            out.append((float(util.gpu), mem.used / 2**20))
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._nvml.nvmlShutdown()


class _SmiReader:
    """The same figures from `nvidia-smi --query-gpu` (no Python binding needed)."""

    def __init__(self, smi: str, indices: list[int] | None) -> None:
        self._argv = [smi, "--query-gpu=index,utilization.gpu,memory.used",
                      "--format=csv,noheader,nounits"]
        self._indices = indices
        self.read()  # fails here when nvidia-smi cannot talk to a driver

    def read(self) -> list[tuple[float, float]]:
        done = subprocess.run(self._argv, capture_output=True, text=True, timeout=20, check=True)
        out = []
        for line in done.stdout.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != 3 or not parts[0].isdigit():
                continue
            if self._indices is None or int(parts[0]) in self._indices:
                with contextlib.suppress(ValueError):
                    out.append((float(parts[1]), float(parts[2])))
        return out

    def close(self) -> None:
        return None


GpuReader = _NvmlReader | _SmiReader


def open_gpu_reader(cuda_visible: str | None, *, smi: str | None = None,
                    use_nvml: bool = True) -> tuple[GpuReader | None, str | None]:
    """A reader of the agent's GPUs, or (None, why not). `smi`: the nvidia-smi to use (None: the
    one on PATH)."""
    indices = _gpu_indices(cuda_visible)
    if use_nvml:
        try:
            return _NvmlReader(indices), None
        except Exception:  # noqa: BLE001 - no binding, no driver, no device: try nvidia-smi
            pass
    smi = smi or shutil.which("nvidia-smi")
    if smi:
        try:
            return _SmiReader(smi, indices), None
        except (OSError, subprocess.SubprocessError):
            pass
    return None, NO_NVML


# ---- the agent's memory ----------------------------------------------------------------------
def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of `pid` and all its descendants, summed."""
    return sum(_rss_bytes(p) for p in [pid, *descendants(pid)])


def own_cgroup_peak(pid: int) -> Path | None:
    """memory.peak of the cgroup (v2) `pid` is in, when that is not the harness's own (the
    sandbox's): None otherwise."""
    def cgroup(p: int | str) -> str | None:
        try:
            with open(f"/proc/{p}/cgroup") as fh:
                lines = fh.read().splitlines()
        except OSError:
            return None
        return next((line[3:] for line in lines if line.startswith("0::")), None)

    mine, theirs = cgroup("self"), cgroup(pid)
    if theirs is None or theirs == mine:
        return None
    path = Path("/sys/fs/cgroup") / theirs.lstrip("/") / "memory.peak"
    return path if path.exists() else None


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


# ---- the sampler -----------------------------------------------------------------------------
@dataclass
class ResourceSamples:
    """What the sampler saw while the agent ran."""

    gpus: int = 0
    """GPUs visible to the agent."""
    gpu_util_mean: float | None = None
    gpu_mem_peak_mb: float | None = None
    gpu_note: str | None = None
    peak_rss_mb: float | None = None
    peak_rss_source: str | None = None


@dataclass
class ResourceSampler:
    """Samples the agent's GPUs and memory every `every_s` in a daemon thread (`start`, `stop`).
    `pid` leads the agent's process tree; `gpus` is how many it sees; `reader` reads them."""

    pid: int
    gpus: int
    reader: GpuReader | None = None
    gpu_note: str | None = None
    every_s: float = SAMPLE_EVERY_S
    _utils: list[float] = field(default_factory=list)
    _mem_peak: float | None = None
    _rss_peak: int = 0
    _cgroup: Path | None = None
    _cgroup_peak: int | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _result: ResourceSamples | None = None

    memory_note: str | None = None
    """Why the agent's memory is not measured (its processes are not in `pid`'s tree)."""

    @classmethod
    def for_agent(cls, pid: int, cuda_visible: str | None, *, memory_note: str | None = None,
                  every_s: float = SAMPLE_EVERY_S) -> ResourceSampler:
        gpus = visible_gpus(cuda_visible)
        reader, note = open_gpu_reader(cuda_visible) if gpus else (None, NO_GPU)
        return cls(pid=pid, gpus=gpus, reader=reader, gpu_note=note, every_s=every_s,
                   memory_note=memory_note)

    def start(self) -> ResourceSampler:
        self._cgroup = own_cgroup_peak(self.pid) if self.memory_note is None else None
        self._thread = threading.Thread(target=self._loop, name="a2rl-cost-sampler", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        started = time.monotonic()
        while True:
            self.sample()
            # every second for the first half-minute (a short agent is seen too), then every_s
            wait = self.every_s if time.monotonic() - started > 30 else min(1.0, self.every_s)
            if self._stop.wait(wait):
                return

    def sample(self) -> None:
        """One sample (a failure of the GPU reader ends GPU sampling, with a note)."""
        if self.memory_note is None:
            self._rss_peak = max(self._rss_peak, tree_rss_bytes(self.pid))
        if self._cgroup is not None:
            peak = _read_int(self._cgroup)
            if peak is not None:
                self._cgroup_peak = max(self._cgroup_peak or 0, peak)
        if self.reader is None:
            return
        try:
            readings = self.reader.read()
        except Exception as exc:  # noqa: BLE001 - the driver went away: stop asking it
            self.reader.close()
            self.reader = None
            self.gpu_note = f"GPU sampling stopped ({type(exc).__name__})"
            return
        if readings:
            self._utils.append(sum(u for u, _ in readings) / len(readings))
            self._mem_peak = max(self._mem_peak or 0.0, sum(m for _, m in readings))

    def stop(self) -> ResourceSamples:
        """End the sampling and say what it saw (again the same on a second call)."""
        if self._result is not None:
            return self._result
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)  # a sample in flight is left to the daemon
        if self.reader is not None:
            self.reader.close()
        note = self.gpu_note
        if note is None and not self._utils:
            note = "no GPU sample was taken (the agent ended first)"
        if self.memory_note is not None:
            rss, source = 0, self.memory_note
        elif self._cgroup_peak:
            rss, source = self._cgroup_peak, "cgroup memory.peak"
        elif self._rss_peak:
            rss, source = self._rss_peak, "sampled RSS"
        else:
            import resource

            rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
            source = "getrusage floor"
        mean = round(sum(self._utils) / len(self._utils), 2) if self._utils else None
        self._result = ResourceSamples(
            gpus=self.gpus, gpu_util_mean=mean,
            gpu_mem_peak_mb=round(self._mem_peak, 1) if self._mem_peak is not None else None,
            gpu_note=note, peak_rss_mb=round(rss / 2**20, 1) if rss else None,
            peak_rss_source=source if rss or self.memory_note else None)
        return self._result


# ---- the record ------------------------------------------------------------------------------
def agent_cost(usage: tuple[int, int, float | None] | None, tail: UnpricedTail,
               model: str | None, *, agent_s: float, samples: ResourceSamples) -> RunCost:
    """The agent's share of the run's cost (the close adds the evaluations and the disk).
    `usage`: the CLI's own (input, output, dollars) totals (None: no usage events)."""
    cost = RunCost(gpus=samples.gpus, agent_gpu_hours=gpu_hours(samples.gpus, agent_s),
                   gpu_util_mean=samples.gpu_util_mean, gpu_mem_peak_mb=samples.gpu_mem_peak_mb,
                   gpu_note=samples.gpu_note, peak_rss_mb=samples.peak_rss_mb,
                   peak_rss_source=samples.peak_rss_source)
    if usage is not None:
        cost.input_tokens, cost.output_tokens = usage[0], usage[1]
        cost.usd, cost.usd_source = llm_spend(usage[2], tail, model)
    return cost


def disk_bytes(folder: Path) -> int:
    """Bytes of the files under `folder`, each stored file counted once (hard links to one blob
    are one), links not followed, folders deeper than `a2rl._walk.MAX_DEPTH` not entered (the
    agent writes part of the tree: it may nest folders without end)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for _folder, dirs, files, fd in fwalk(folder):
        for name in files + dirs:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) or (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_size
    return total


def evaluation_gpus(engine: EngineInfo | None) -> int:
    """GPUs the evaluation child saw: none on CPU, else its --eval-gpus (or the harness's own
    CUDA_VISIBLE_DEVICES, which it inherits)."""
    if engine is None or engine.device == "cpu":
        return 0
    return visible_gpus(engine.eval_gpus if engine.eval_gpus is not None
                        else os.environ.get("CUDA_VISIBLE_DEVICES"))


def close_cost(record: RunRecord, run_dir: Path) -> RunCost:
    """The run's cost at its close: the agent's share (an empty one when the agent never
    started), the evaluations' GPU-hours and the run folder's bytes. Never raises: the record is
    written whatever this finds."""
    cost = record.cost.model_copy() if record.cost is not None else RunCost()
    cost.eval_gpu_hours = eval_gpu_hours(record.submissions, evaluation_gpus(record.engine))
    with contextlib.suppress(OSError):
        cost.disk_bytes = disk_bytes(run_dir)
    return cost
