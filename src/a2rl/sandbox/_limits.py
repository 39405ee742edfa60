"""Resource limits of the agent's processes: how many processes, how much memory, how large a
file. Defaults hold for an ordinary run and `a2rl run --agent-procs/--agent-memory/
--agent-file-size` raise (or lower) them.

How each limit is applied:
- processes: RLIMIT_NPROC, plus a `pids` cgroup when the harness can create one (root, or a
  delegated cgroup). The kernel does not apply RLIMIT_NPROC to processes whose host uid is
  root, and a root-run sandbox maps the agent to host root, so as root only the cgroup holds
  a fork bomb. podman: `--pids-limit` and `--ulimit nproc`.
- memory: RLIMIT_AS (`ulimit -v`), default twice the physical memory. CUDA reserves address
  space far beyond the memory it uses, so when GPU devices are passed into the sandbox the
  default leaves the address space unlimited; an explicit `--agent-memory` still applies.
  podman: the container's cgroup memory limit (`--memory`, default the physical memory).
- file size: RLIMIT_FSIZE (`ulimit -f`); a larger write fails with EFBIG (the writer gets
  SIGXFSZ).

A process that exceeds a limit fails or is killed by the kernel; the harness sees the agent
exit (or keep going) and closes the run as usual, every record kept.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import secrets
from dataclasses import dataclass
from pathlib import Path

from a2rl._errors import A2RLError

DEFAULT_PROCS = 4096
DEFAULT_FILE_SIZE = 256 << 30
"""Large enough for a full checkpoint of a large model in one file."""
_CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)


def parse_size(text: str, option: str) -> int:
    """`64G`, `512M`, `1.5T`, `4096` (bytes) -> bytes."""
    m = _SIZE.match(text)
    if not m:
        raise A2RLError(f"{option} {text!r} is not a size", f"use e.g. {option} 64G or 512M")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    value = int(float(m.group(1)) * scale)
    if value <= 0:
        raise A2RLError(f"{option} {text!r} must be more than 0", f"use e.g. {option} 64G")
    return value


def default_memory() -> int:
    """Twice the machine's physical memory: room for the address space a training process
    reserves, while a runaway allocation still fails before the machine swaps to a halt."""
    return 2 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


@dataclass(frozen=True)
class Limits:
    procs: int = DEFAULT_PROCS
    """Most processes (and threads) the agent may have at once."""
    memory: int | None = None
    """Address-space limit in bytes per process; None = `default_memory()` without GPUs,
    unlimited with them."""
    file_size: int = DEFAULT_FILE_SIZE
    """Largest file the agent may write, in bytes."""

    @classmethod
    def from_options(cls, procs: int | None, memory: str | None,
                     file_size: str | None) -> Limits:
        if procs is not None and procs < 16:
            raise A2RLError(f"--agent-procs {procs} is too low to start an agent",
                            "use at least 16 (default 4096)")
        return cls(procs=procs or DEFAULT_PROCS,
                   memory=parse_size(memory, "--agent-memory") if memory else None,
                   file_size=parse_size(file_size, "--agent-file-size") if file_size
                   else DEFAULT_FILE_SIZE)

    def address_space(self, gpus: bool) -> int | None:
        """The RLIMIT_AS to apply (None: none)."""
        if self.memory is not None:
            return self.memory
        return None if gpus else default_memory()

    def rlimits(self, gpus: bool) -> list[tuple[int, int]]:
        out = [(resource.RLIMIT_NPROC, self.procs), (resource.RLIMIT_FSIZE, self.file_size)]
        if (space := self.address_space(gpus)) is not None:
            out.append((resource.RLIMIT_AS, space))
        return out

    def podman_args(self) -> list[str]:
        """podman run options (the OCI runtime sets them inside the container)."""
        args = ["--pids-limit", str(self.procs),
                "--ulimit", f"fsize={_lowered(resource.RLIMIT_FSIZE, self.file_size)}"]
        # podman's --ulimit has no address-space limit: memory is the container's cgroup
        # limit (resident memory, so CUDA's reservations do not count against it).
        args += ["--memory", str(self.memory or default_memory() // 2)]
        return args


def _lowered(which: int, value: int) -> str:
    """`value` as soft:hard, never above the current hard limit (a container runtime without
    CAP_SYS_RESOURCE may only lower limits)."""
    _soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    return f"{value}:{value}"


def apply_rlimits(pairs: list[tuple[int, int]]) -> None:
    """In the child before exec: lower each limit to `value` (never above the hard limit)."""
    for which, value in pairs:
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (value, value))


class PidsCgroup:
    """A `pids` cgroup capping the agent's process count (v1 `pids` hierarchy or a v2 one
    with the pids controller); `create` returns None where the harness may not make one."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, max_pids: int) -> PidsCgroup | None:
        for root in _CGROUP_ROOTS:
            if not (root / "cgroup.procs").exists():
                continue
            if root == Path("/sys/fs/cgroup") and "pids" not in _read(root / "cgroup.controllers"):
                continue
            path = root / f"a2rl-{secrets.token_hex(6)}"
            try:
                path.mkdir()
                (path / "pids.max").write_text(str(max_pids))
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            return cls(path)
        return None

    def enter(self) -> None:
        """In the child before exec: move this process (and so every descendant) in."""
        with contextlib.suppress(OSError):
            (self.path / "cgroup.procs").write_text("0")

    def remove(self) -> None:
        """Remove the cgroup once its processes are gone (idempotent)."""
        with contextlib.suppress(OSError):
            self.path.rmdir()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
