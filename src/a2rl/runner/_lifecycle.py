"""A run's life when the harness itself is stopped.

SIGTERM and SIGHUP (what `timeout`, `scancel`, preemption and a closed terminal send) are
handled like Ctrl-C: `terminate_on_signals` turns them into `HarnessTerminated` in the main
thread, so every stage unwinds through the same code that closes run.json from the ledger
(submissions, best), and `kill_leftover_groups` then kills the process groups of every
child the harness started (the evaluation children run in their own sessions, the agent in
its own). A second signal during that cleanup is ignored.

SIGKILL cannot be handled: `repair_run` (`a2rl runs repair RUN`) closes such a record
afterwards from its ledger, marks it `harness_died`, and kills what is left of the run: only
processes that carry the run's mark (`RUN_MARK_ENV` in their environment, a random value whose
SHA-256 the record keeps; every process the harness starts inherits it, and no other process can
be given it afterwards). A working directory, a command line or an open file in the run folder
proves nothing (an operator's shell, a `tail -f` of the summary); nor does a recorded process
proof alone, which anyone can compute from /proc: the recorded agent group is signalled only
while its leader matches `agent_proof` and carries the mark.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from a2rl._errors import A2RLError
from a2rl._util import atomic_write_text, descendants, kept_processes, utcnow
from a2rl.runner._supervise import HarnessTerminated
from a2rl.schema import ProcessProof, RunRecord

HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
SANDBOX_FILE = "sandbox.json"
"""In the run directory: the backend's name and what it may leave behind (`Sandbox.leftovers()`),
written when the agent starts."""


def _remove_sandbox_leftovers(run_dir: Path) -> None:
    """What the run's backend left running outside the harness's process tree (a podman
    container is conmon's child, not the harness's), removed by the backend itself from what it
    recorded at the agent's start (`Sandbox.leftovers()`)."""
    import json

    try:
        state = json.loads((run_dir / SANDBOX_FILE).read_text())
        kind = state["backend"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    from a2rl.sandbox import backend_class

    try:
        remove = getattr(backend_class(str(kind)), "remove_leftovers", None)
    except A2RLError:  # a plug-in backend that is not installed here
        return
    if callable(remove):
        remove(state)


RUN_MARK_ENV = "A2RL_RUN_MARK"
"""In the environment of every process the harness starts: the harness's random mark."""
_mark: list[str] = []


def run_mark() -> str:
    """This harness's process mark, made on the first call and put into `os.environ` (so every
    child started afterwards inherits it; an agent environment built from scratch adds it)."""
    if not _mark:
        _mark.append(secrets.token_hex(16))
    os.environ[RUN_MARK_ENV] = _mark[0]
    return _mark[0]


def mark_sha256(mark: str) -> str:
    """What the record keeps of the mark: repair matches it, a reader cannot hand it out."""
    return hashlib.sha256(mark.encode()).hexdigest()


def carries_mark(pid: int, sha256: str) -> bool:
    """Whether process `pid` was started with the mark whose SHA-256 is `sha256`
    (/proc/<pid>/environ: its environment at exec, which nothing can change from outside)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read()
    except OSError:
        return False
    prefix = RUN_MARK_ENV.encode() + b"="
    values = [item[len(prefix):] for item in raw.split(b"\0") if item.startswith(prefix)]
    return any(hashlib.sha256(v).hexdigest() == sha256 for v in values)


_state = threading.local()


@contextlib.contextmanager
def closing() -> Iterator[None]:
    """Within: a SIGTERM/SIGHUP does not interrupt (the run record is being written)."""
    depth = getattr(_state, "closing", 0)
    _state.closing = depth + 1
    try:
        yield
    finally:
        _state.closing = depth


@contextlib.contextmanager
def terminate_on_signals() -> Iterator[None]:
    """Within: SIGTERM/SIGHUP raise HarnessTerminated once (then are ignored while the run
    closes, and never raised inside `closing()`). Outside the main thread (signals cannot be
    caught there) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        if fired:
            return  # already closing the run
        fired.append(signum)
        if getattr(_state, "closing", 0):
            return  # the record is being closed anyway; the process exits after it
        raise HarnessTerminated(signum)

    previous = {sig: signal.signal(sig, handler) for sig in HANDLED_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def kill_leftover_groups(run_dirs: list[Path]) -> list[int]:
    """SIGKILL what this harness started for these runs and is still alive (an evaluation
    child in flight when a signal stopped the run, a sandbox that outlived its agent): this
    process's descendants whose working directory or command line lies in a run directory.
    A process leading its own group is killed with its group; never this process's group,
    never a process kept for every run (`a2rl._util.keep_process`). Returns the pids signalled."""
    mine = set(descendants(os.getpid())) - kept_processes()
    hit: list[int] = []
    for run_dir in run_dirs:
        for pid in _processes_of(run_dir):
            if pid in mine and pid not in hit:
                _kill_with_group(pid)
                hit.append(pid)
    return hit


def _kill_with_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        group = os.getpgid(pid)
        if group == pid and group != os.getpgrp():
            os.killpg(group, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)


def _processes_of(run_dir: Path) -> list[int]:
    """Live processes whose cwd, command line or an open file lies in `run_dir` (the
    evaluation children write their log there; the agent's sandbox mounts the workspace
    there)."""
    needle = str(run_dir.resolve())
    out: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            cwd = ""
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd == needle or cwd.startswith(needle + "/") or needle in cmd \
                or _holds_file_in(entry, needle):
            out.append(int(entry))
    return out


def _holds_file_in(pid: str, needle: str) -> bool:
    """An open descriptor inside the run directory (an evaluation child's log: its command
    line names no path, its job comes on stdin)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(needle + "/"):
            return True
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def repair_run(run_dir: Path, notes: list[str] | None = None) -> tuple[RunRecord, list[int]]:
    """Close the run.json of a run whose harness died: submissions and best from the ledger,
    status failed / exit reason harness_died, leftover processes killed. A record that is
    already closed is left as it is. What was left alone on purpose (a recorded process group
    that cannot be proven the run's) is appended to `notes` and to the record's error."""
    said: list[str] = []
    from a2rl.grader import Ledger

    path = run_dir / "run.json"
    if not path.exists():
        raise A2RLError(f"{run_dir} holds no run.json", "pass a run directory (a2rl runs list)")
    record = RunRecord.model_validate_json(path.read_text())
    if record.status in ("finished", "failed", "stopped") and record.ended_at is not None:
        raise A2RLError(f"run {record.run_id} is already closed ({record.status})",
                        "nothing to repair; `a2rl runs show` shows it")
    if record.harness_pid is not None and record.harness_pid != os.getpid() \
            and _alive(record.harness_pid) and _is_a2rl(record.harness_pid):
        raise A2RLError(f"the harness of run {record.run_id} (pid {record.harness_pid}) is "
                        "still running", "wait for it, or stop it with SIGTERM (it closes the "
                        "run itself); repair is for runs whose harness died")
    killed: list[int] = []
    if record.agent_pgid is not None:
        why = agent_group_unproven(record)
        if why is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(record.agent_pgid, signal.SIGKILL)
                killed.append(record.agent_pgid)
        else:
            said.append(f"agent process group {record.agent_pgid} not signalled: {why}")
    _remove_sandbox_leftovers(run_dir)
    if record.process_mark_sha256 is None:
        said.append("no leftover process signalled: the record holds no process mark (find "
                    "them with `ps`)")
    else:
        for pid in _processes_of(run_dir):
            if pid not in killed and carries_mark(pid, record.process_mark_sha256):
                _kill_with_group(pid)
                killed.append(pid)
    ledger_path = run_dir / "ledger.jsonl"
    if ledger_path.exists():
        ledger = Ledger(ledger_path)
        record.submissions = ledger.records()
        record.best = ledger.best()
        if record.best and record.baseline:
            record.improvement = round(record.best.score - record.baseline.score, 4)
    record.status = "failed"
    record.exit_reason = "harness_died"
    record.error = (record.error or "the harness died (killed, out of memory or the machine "
                    "went down) before closing the run") + "; closed by `a2rl runs repair`" + \
        "".join(f"; {n}" for n in said)
    if notes is not None:
        notes.extend(said)
    record.ended_at = record.repaired_at = utcnow()
    atomic_write_text(path, record.model_dump_json(indent=2))
    return record, killed


def _is_a2rl(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"a2rl" in fh.read()
    except OSError:
        return False


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _start_ticks(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat: when the process started, in clock ticks after boot."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces or ')': split after
    # the last ')'; field 3 is then the first one
    fields = raw[raw.rfind(b")") + 2:].split()
    try:
        return int(fields[22 - 3])
    except (IndexError, ValueError):
        return None


def _cmdline_sha256(pid: int) -> str | None:
    import hashlib

    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def process_proof(pid: int) -> ProcessProof | None:
    """The identity of live process `pid` (None: it is gone or /proc cannot tell)."""
    ticks, cmd = _start_ticks(pid), _cmdline_sha256(pid)
    if ticks is None or cmd is None:
        return None
    return ProcessProof(pid=pid, start_ticks=ticks, boot_id=_boot_id(), cmdline_sha256=cmd)


def proof_mismatch(proof: ProcessProof) -> str | None:
    """Why process `proof.pid` is not (provably) the recorded one now; None when it is."""
    now = process_proof(proof.pid)
    if now is None:
        return f"no process {proof.pid} is running"
    if proof.boot_id and now.boot_id != proof.boot_id:
        return "the machine rebooted since it was recorded"
    if now.start_ticks != proof.start_ticks:
        return f"process {proof.pid} started at another time: another process reuses the pid"
    if now.cmdline_sha256 != proof.cmdline_sha256:
        return f"process {proof.pid} runs another command line than the recorded one"
    return None


def agent_group_unproven(record: RunRecord) -> str | None:
    """Why `record.agent_pgid` must not be signalled; None when its leader is provably the
    run's agent (same pid, start time, boot and command line as recorded at its start)."""
    proof = record.agent_proof
    if proof is None:
        return "the record holds no proof that the group is the run's (start time and command " \
               "line of its leader)"
    if proof.pid != record.agent_pgid:
        return f"the record's proof is for pid {proof.pid}, not the group {record.agent_pgid}"
    if (mismatch := proof_mismatch(proof)) is not None:
        return mismatch
    if record.process_mark_sha256 is None or not carries_mark(proof.pid,
                                                               record.process_mark_sha256):
        return f"process {proof.pid} does not carry the run's mark (its environment was not " \
               "given by the run's harness)"
    return None
