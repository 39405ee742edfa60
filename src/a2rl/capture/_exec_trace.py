"""Which programs the agent actually ran: every execve inside the sandbox, with start and end
time and exit status, from the log strace writes outside the sandbox
(`a2rl.extensions.exec_trace`).

This is the evidence behind "a verified training experiment = an executed command that launched a
parameter update" for any agent, scripted or LLM-driven. The sandbox's own processes (bwrap, the
network bridge) are dropped from the parsed events. When the trace also recorded opens
(`traced_command(..., extra_syscalls=...)`), the files the processes opened are read here too
(`parse_file_opens`), and so are the connects and clones traced for egress attribution
(`parse_egress_trace`): this module is the one reader of strace's line format.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from a2rl.schema import ExecEvent, read_jsonl

# argv is matched string by string (a quoted argument may hold `], ` itself: a lazy `.*?\]` would
# end the list there and drop the arguments after it); strace marks a string cut at -s and a list
# cut at its length limit with `...`.
_ARGV = r'\[((?:"(?:[^"\\]|\\.)*"(?:\.\.\.)?|\.\.\.|, )*)\]'
_EXEC = re.compile(r'^(\d+)\s+(\d+\.\d+)\s+execve\("((?:[^"\\]|\\.)*)", ' + _ARGV
                   + r'\.?\.?\.?, .*\) = (\S+)')
_EXIT = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+\+\+\+ (?:exited with (\d+)|killed by (SIG\w+))")
# open(path, flags[, mode]), openat(dirfd, path, flags[, mode]), openat2(dirfd, path, {flags=…})
_OPEN = re.compile(r'^(\d+)\s+(\d+\.\d+)\s+open(?:at2?)?\((?:[^,"]*,\s*)?"((?:[^"\\]|\\.)*)"'
                   r'(?:\.\.\.)?(.*)\)\s*=\s*(-?\d+)')
_OPEN_CALL = re.compile(r"^\d+\s+\d+\.\d+\s+open(?:at2?)?\(")
_FLAG = re.compile(r"\bO_[A-Z_]+")
_NOT_READ_FLAGS = frozenset({"O_DIRECTORY", "O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC"})
_STAMP = re.compile(r"^(\d+)\s+(\d+\.\d+)\s")
# connect(fd, {sa_family=AF_INET, sin_port=htons(N), …}, len) and the AF_INET6 form, or the
# AF_UNIX form naming a socket file (an abstract socket, `sun_path=@"…"`, names no file).
_CONNECT = re.compile(r'^(\d+)\s+(\d+\.\d+)\s+connect\(\d+, \{sa_family=(?:AF_INET6?, '
                      r'sin6?_port=htons\((\d+)\)|AF_UNIX, sun_path="((?:[^"\\]|\\.)*)")')
# the result after the address (whose only free text, a socket path, is matched before it)
_RESULT = re.compile(r"\) = (-?\d+)(?: (E[A-Z0-9]+))?")
# The child's id as the tracer sees it: strace prints the id in the sandbox's own PID namespace
# and, with --pidns-translation, the tracer's in a comment; only the latter names a traced pid.
_SPAWN = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(?:clone3?|v?fork)\(.*\)\s+=\s+\d+ "
                    r"/\* (\d+) in strace's PID NS \*/")
_ARG = re.compile(r'"((?:[^"\\]|\\.)*)"')
_SIGNALS = {"SIGHUP": 1, "SIGINT": 2, "SIGKILL": 9, "SIGSEGV": 11, "SIGPIPE": 13, "SIGTERM": 15}


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), s)


@dataclass(frozen=True)
class FileOpen:
    """A successful open of a file in the trace (`open`, `openat` or `openat2` traced)."""

    pid: int
    """Process id as the tracer (outside the sandbox) sees it."""
    t_s: float
    """Seconds after t0 (the agent's start)."""
    path: str
    """The path as the process named it (relative to its working directory, or absolute)."""
    flags: frozenset[str]
    """The open flags (`O_RDONLY`, `O_CLOEXEC`, …)."""
    program: str | None
    """The program the process ran at the time (its last successful exec), if traced."""

    @property
    def for_reading(self) -> bool:
        """A file opened to read it: not a folder listing, not a write, create or truncate."""
        return not self.flags & _NOT_READ_FLAGS


@dataclass(frozen=True)
class Connect:
    """A traced `connect()` to an IPv4/IPv6 port or to a Unix socket file."""

    pid: int
    """Thread id as the tracer (outside the sandbox) sees it."""
    t_s: float
    """Seconds after t0, to the tracer's microsecond (not rounded: other clocks' times, the
    egress proxy's, are matched against it)."""
    port: int | None
    """The port connected to (AF_INET, AF_INET6)."""
    socket_path: str | None
    """The socket file connected to (AF_UNIX), as the process named it."""
    result: int | None
    """What the call returned (0, or -1 with `error`); None when it was cut before returning."""
    error: str | None
    """The errno name of a -1 result: `EINPROGRESS` (a non-blocking connect under way, the
    usual start of an asynchronous client's connection), `ECONNREFUSED`, …"""


@dataclass(frozen=True)
class Spawn:
    """A thread or process started by another (`clone`, `clone3`, `fork`, `vfork`), from a log
    that names the child as the tracer sees it (`--pidns-translation`)."""

    parent: int
    child: int
    t_s: float
    """Seconds after t0."""


@dataclass(frozen=True)
class EgressTrace:
    """What a log traced with the egress calls (`EGRESS_SYSCALLS`) holds: the programs, every
    connect and who started whom."""

    programs: list[ExecEvent]
    """As `parse_exec_log` gives them."""
    connects: list[Connect]
    """By time."""
    spawns: list[Spawn]
    """By time (the start of the call)."""


_UNFINISHED = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*?) <unfinished \.\.\.>$")
_RESUMED = re.compile(r"^(\d+)\s+\d+\.\d+\s+<\.\.\. \w+ resumed>(.*)$")


def _join_unfinished(text: str) -> list[str]:
    """The log's lines with each call that strace split (`<unfinished ...>` when another
    process's event came in between, then `<... execve resumed>`) joined into one line at the
    call's start time. Without this the execs of busy, parallel processes are lost."""
    out: list[str] = []
    pending: dict[str, tuple[int, str]] = {}
    for line in text.splitlines():
        if m := _UNFINISHED.match(line):
            pending[m[1]] = (len(out), f"{m[1]} {m[2]} {m[3]}")
            out.append("")  # the joined line takes this place (start-time order)
        elif (m := _RESUMED.match(line)) and m[1] in pending:
            index, head = pending.pop(m[1])
            out[index] = head + m[2]
        else:
            out.append(line)
    for index, head in pending.values():  # never resumed (killed mid-call)
        out[index] = head
    return out


def parse_exec_log(text: str, t0: float, *,
                   hide: Sequence[Sequence[str]] = ()) -> list[ExecEvent]:
    """Parse strace output; times are made relative to `t0` (the agent's start, epoch s).
    An exec whose argv starts with one of `hide` (the sandbox's own programs) is dropped."""
    reader = ExecLogReader(t0, hide=hide)
    reader.feed(text)
    return reader.events(final=True)


def parse_file_opens(text: str, t0: float, *,
                     keep: Callable[[str], bool]) -> tuple[list[FileOpen], bool]:
    """The successful opens in strace output of the paths `keep` accepts, by time (relative to
    `t0`), and whether the log traced opens at all (it does when `traced_command` was given
    the open calls in `extra_syscalls`)."""
    reader = ExecLogReader(t0, keep_opens=keep)
    reader.feed(text)
    reader.events(final=True)
    return sorted(reader.opens, key=lambda o: (o.t_s, o.pid)), reader.traced_opens


def parse_egress_trace(text: str, t0: float) -> EgressTrace:
    """The programs, connects and spawns in strace output, times relative to `t0` (0: epoch
    times, to match against another log's). A log traced without connects or clones has none."""
    reader = ExecLogReader(t0, keep_egress=True)
    reader.feed(text)
    programs = reader.events(final=True)
    return EgressTrace(programs, sorted(reader.connects, key=lambda c: (c.t_s, c.pid)),
                       sorted(reader.spawns, key=lambda s: s.t_s))


def exec_log_t0(text: str, events: Sequence[ExecEvent]) -> float:
    """The epoch time that `events` (exec.jsonl, parsed from the log `text`) count from: the
    first event's exec line in the log, less its start; without events (or that line), the
    log's first time."""
    first = events[0] if events else None
    earliest: float | None = None
    for line in _join_unfinished(text):
        if earliest is None and (m := _STAMP.match(line)):
            earliest = float(m[2])
            if first is None:
                break
        if first is not None and (m := _EXEC.match(line)) and int(m[1]) == first.pid \
                and m[5] == "0":
            return float(m[2]) - first.start_s
    return earliest if earliest is not None else 0.0


class ExecLogReader:
    """`parse_exec_log` fed piece by piece (the log of a running agent, read as it grows): each
    line is parsed once. A call strace split is parsed when it resumes: its process is inside
    that call until then, so no event of that process comes between. `keep_opens`: the opened
    paths to keep in `opens` (none without it). `keep_egress`: keep the connects and the spawns
    too (`connects`, `spawns`)."""

    def __init__(self, t0: float, *, hide: Sequence[Sequence[str]] = (),
                 keep_opens: Callable[[str], bool] | None = None,
                 keep_egress: bool = False) -> None:
        self.t0, self.hide = t0, [list(h) for h in hide if h]
        self.keep_opens, self.keep_egress = keep_opens, keep_egress
        self.opens: list[FileOpen] = []
        """Successful opens of the paths `keep_opens` accepts, in log order."""
        self.connects: list[Connect] = []
        """Every connect (failed ones too), in the order the calls returned."""
        self.spawns: list[Spawn] = []
        """Every clone or fork that names its child as the tracer sees it, in the order the
        calls returned."""
        self.traced_opens = False
        """Whether the log so far holds open calls (traced only when asked)."""
        self._program: dict[int, str] = {}  # pid -> its last exec'd program, hidden ones too
        self._by_pid: dict[int, ExecEvent] = {}
        self._done: list[ExecEvent] = []
        self._pending: dict[str, str] = {}
        self._rest = b""
        self._offset = 0

    def poll(self, path: Path, *, max_bytes: int = 64 << 20) -> list[ExecEvent]:
        """Read what was added to the log at `path` since the last poll, at most `max_bytes`
        (a burst of execs is read over several polls); the events so far."""
        try:
            with path.open("rb") as fh:
                fh.seek(self._offset)
                data = fh.read(max_bytes)
        except OSError:
            return self.events()
        self._offset += len(data)
        data = self._rest + data
        cut = data.rfind(b"\n") + 1  # only whole lines: the last one may still be written
        self._rest = data[cut:]
        self.feed(data[:cut].decode(errors="replace"))
        return self.events()

    def feed(self, text: str) -> None:
        """Parse whole lines of the log."""
        for line in text.splitlines():
            if m := _UNFINISHED.match(line):
                self._pending[m[1]] = f"{m[1]} {m[2]} {m[3]}"
            elif (m := _RESUMED.match(line)) and m[1] in self._pending:
                self._line(self._pending.pop(m[1]) + m[2])
            else:
                self._line(line)

    def events(self, *, final: bool = False) -> list[ExecEvent]:
        """The programs so far, by start; a running one has no end. `final`: the log is
        complete, a call never resumed (killed mid-call) is parsed as it began."""
        if final:
            for head in list(self._pending.values()):
                self._line(head)
            self._pending.clear()
        running = [ev.model_copy() for ev in self._by_pid.values()]
        return sorted([*self._done, *running], key=lambda e: (e.start_s, e.pid))

    def _line(self, line: str) -> None:
        if m := _EXEC.match(line):
            pid, ts, program, args, result = int(m[1]), float(m[2]), m[3], m[4], m[5]
            if result != "0":
                return  # PATH lookups that failed
            self._program[pid] = _unescape(program)
            argv = [_unescape(a) for a in _ARG.findall(args)]
            if any(argv[:len(h)] == h for h in self.hide):
                return
            prev = self._by_pid.get(pid)
            start = prev.start_s if prev else round(ts - self.t0, 3)
            # A process that exec's again (shims, `exec "$@"`) keeps its start, changes program.
            self._by_pid[pid] = ExecEvent(pid=pid, start_s=start, end_s=None, exit_code=None,
                                          program=self._program[pid], argv=argv)
        elif self.keep_opens is not None and _OPEN_CALL.match(line):
            self._open(line, self.keep_opens)
        elif self.keep_egress and (m := _CONNECT.match(line)):
            result = _RESULT.search(line, m.end())
            self.connects.append(Connect(
                pid=int(m[1]), t_s=float(m[2]) - self.t0, port=int(m[3]) if m[3] is not None else None,
                socket_path=_unescape(m[4]) if m[4] is not None else None,
                result=int(result[1]) if result else None, error=result[2] if result else None))
        elif self.keep_egress and (m := _SPAWN.match(line)):
            self.spawns.append(Spawn(parent=int(m[1]), child=int(m[3]), t_s=float(m[2]) - self.t0))
        elif m := _EXIT.match(line):
            pid, ts = int(m[1]), float(m[2])
            self._program.pop(pid, None)
            ev = self._by_pid.pop(pid, None)
            if ev is None:
                return
            ev.end_s = round(ts - self.t0, 3)
            ev.exit_code = int(m[3]) if m[3] is not None else -_SIGNALS.get(m[4], 0)
            self._done.append(ev)

    def _open(self, line: str, keep: Callable[[str], bool]) -> None:
        self.traced_opens = True
        m = _OPEN.match(line)
        if m is None or int(m[5]) < 0:
            return  # failed, or cut by a kill before its result
        path = _unescape(m[3])
        if keep(path):
            pid = int(m[1])
            self.opens.append(FileOpen(pid=pid, t_s=round(float(m[2]) - self.t0, 3), path=path,
                                       flags=frozenset(_FLAG.findall(m[4])),
                                       program=self._program.get(pid)))


def read_exec_events(run_dir: Path) -> list[ExecEvent] | None:
    """None when the run was not traced."""
    path = run_dir / "agent" / "exec.jsonl"
    return read_jsonl(path, ExecEvent) if path.exists() else None
