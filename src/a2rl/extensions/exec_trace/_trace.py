"""The tracer's command line. strace runs OUTSIDE the sandbox, around the sandbox's own command
line (`strace -f -o <run dir>/agent/exec.log -- bwrap ... -- agent`), and writes the log itself:
no descriptor of the log ever enters the sandbox, the tracer's process is outside the agent's
PID namespace (it cannot be signalled, ptraced or read through /proc from inside), and the log's
folder is not mounted (a log on a descriptor inherited inside the sandbox would let the agent
append forged `execve` lines). seccomp filtering makes only the traced calls stop the tracee."""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path


def strace_available() -> str | None:
    return shutil.which("strace")


@functools.cache
def _translates_pids(strace: str) -> bool:
    """strace ≥ 5.9 can print the pids a sandboxed tracee sees (its own PID namespace) with the
    host's beside them (`--pidns-translation`), which ties a clone's child to its parent."""
    try:
        done = subprocess.run([strace, "-h"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "pidns" in done.stdout + done.stderr  # --pidns-translation, or --decode-pids=pidns


def traced_command(argv: list[str], *, strace: str, log: Path,
                   extra_syscalls: Sequence[str] = ()) -> list[str]:
    """Wrap the sandbox's command line `argv` (run by the harness, outside the sandbox) so
    strace follows every process and writes each exec to `log`, a path the sandbox cannot
    reach. `extra_syscalls` are traced too (`AgentLaunch.trace_syscalls`); `parse_exec_log`
    skips their lines."""
    trace = ",".join(["execve", *extra_syscalls])
    translate = ["--pidns-translation"] if _translates_pids(strace) else []
    return [strace, "-f", "-q", "--seccomp-bpf", *translate, "-e", f"trace={trace}",
            "-e", "signal=none", "-ttt", "-s", "4096", "-o", str(log), "--", *argv]
