"""What the agent's machine is, in words for `instructions.md`: agents plan training from it
(PostTrainBench states its hardware too), and an agent that guesses a GPU, a working
`pip install` or a disk-backed /tmp wastes its budget. Everything is measured on the machine
the run starts on, and the network lines follow the run's own policy."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

_INDEX_HOSTS = ("pypi.org", "files.pythonhosted.org")


@dataclass(frozen=True)
class NetworkFacts:
    """The run's network and isolation, as far as the agent's tools are concerned."""

    policy: str
    """allowlist, none or full (`a2rl run --network`)."""
    sandboxed: bool = True
    """False with --no-sandbox: HOME and /tmp are then the host's."""
    package_index: bool = False
    """The task lets the package indexes through the allowlist."""
    extra_hosts: tuple[str, ...] = ()
    """--allow-host entries."""

    @property
    def pip_works(self) -> bool:
        if self.policy == "full":
            return True
        return self.policy == "allowlist" and (
            self.package_index or all(h in self.extra_hosts for h in _INDEX_HOSTS))

    def lines(self) -> list[str]:
        pip = ("`pip install` reaches PyPI." if self.pip_works else
               "`pip install` cannot reach PyPI: use the packages already installed "
               "(`python -m pip list`).")
        if self.policy == "none":
            net = ("- Network: none. Only the grader (`$A2RL_GRADER_URL`) answers; downloads, "
                   "the Hugging Face Hub and `pip install` do not work: use the packages "
                   "already installed (`python -m pip list`).")
        elif self.policy == "allowlist":
            hosts = [*(_INDEX_HOSTS if self.package_index else ()), *self.extra_hosts]
            net = ("- Network: outgoing connections go through a recording proxy "
                   "(`$HTTPS_PROXY`) that lets only this run's allowed hosts through"
                   + (f" ({', '.join(hosts)})" if hosts else "") + "; anything else is refused "
                   "and logged. The Hugging Face Hub is not reachable unless listed: load the "
                   f"model from `model/`. {pip}")
        else:
            net = (f"- Network: the host's own network (not restricted). {pip[:-1]} if the host "
                   "is online.")
        if self.sandboxed:
            tmp = ("- `HOME` (`/tmp/home`) and `/tmp` are private and **memory-backed** "
                   "(tmpfs): what you write there uses RAM and is gone when the run ends. "
                   "Caches default to `~/.cache` (`HF_HOME=/tmp/home/.cache/huggingface`, "
                   "pip's cache): set `HF_HOME=$PWD/code/.hf` and put checkpoints, datasets "
                   "and caches under `code/` or `output/` (on disk).")
        else:
            tmp = ("- No sandbox: `HOME` is `/tmp/home` and `/tmp` is the host's. Put "
                   "checkpoints, datasets and caches (`HF_HOME=$PWD/code/.hf`) under `code/` "
                   "or `output/`.")
        return [net, tmp]


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


def _disk_free_gib(path: Path | None) -> float | None:
    probe = path
    while probe is not None and not probe.exists() and probe.parent != probe:
        probe = probe.parent
    try:
        return shutil.disk_usage(probe).free / 2**30 if probe is not None else None
    except OSError:
        return None


def machine_facts(workspace: Path | None = None, network: NetworkFacts | None = None) -> str:
    """A markdown bullet list: GPUs, CPU cores usable by this process, memory, free disk under
    the workspace, then the network, pip, HOME//tmp and caches. The text goes through
    `string.Template` as a value (so `$` is literal)."""
    gpus = _gpus()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    mem = _memory_gib()
    disk = _disk_free_gib(workspace)
    lines = [f"- GPUs: {len(gpus)} ({'; '.join(gpus)})" if gpus else
             "- GPUs: none. Training and inference run on the CPU: size models, batches and "
             "step counts for that.",
             f"- CPU cores: {cores}",
             f"- Memory: {mem:.0f} GiB" if mem is not None else "- Memory: unknown"]
    if disk is not None:
        lines.append(f"- Disk: {disk:.0f} GiB free for `code/` and `output/` when the run "
                     "started (every submission is also copied once)")
    if network is None:  # the policy is not known (instructions rendered outside a run)
        lines.append("- Whether `pip install` and other network access work depends on the "
                     "run's network policy: try it, and do not plan on it.")
        lines.append("- `HOME` and `/tmp` are private to you and may be memory-backed: put large "
                     "files (checkpoints, datasets, caches) under `code/` or `output/`, not in "
                     "`/tmp` or `~/.cache`. Set `HF_HOME=$PWD/code/.hf` if a library wants a "
                     "cache folder.")
    else:
        lines += network.lines()
    return "\n".join(lines)
