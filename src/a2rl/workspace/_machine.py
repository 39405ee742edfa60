"""What the agent's machine is, in words for `instructions.md`: agents plan training from it
(PostTrainBench states its hardware too), and an agent that guesses a GPU wastes its budget."""

from __future__ import annotations

import os
import shutil
import subprocess


def _gpus() -> list[str]:
    # nvidia-smi, not torch: building a workspace must not import torch (CLI start-up stays fast).
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run([exe, "--query-gpu=name,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def machine_facts() -> str:
    """A markdown bullet list: GPUs, CPU cores usable by this process, memory."""
    gpus = _gpus()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    mem = _memory_gib()
    lines = [f"- GPUs: {len(gpus)} ({'; '.join(gpus)})" if gpus else
             "- GPUs: none. Training and inference run on the CPU: size models, batches and "
             "step counts for that.",
             f"- CPU cores: {cores}",
             f"- Memory: {mem:.0f} GiB" if mem is not None else "- Memory: unknown"]
    return "\n".join(lines)
