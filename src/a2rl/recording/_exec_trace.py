"""Which programs the agent actually ran: every execve inside the sandbox, with start and end
time and exit status, from the log strace writes outside the sandbox
(`a2rl.extensions.exec_trace`).

This is the evidence behind "a verified training experiment = an executed command that launched a
parameter update" for any agent, scripted or LLM-driven. The sandbox's own processes (bwrap, the
network bridge) are dropped from the parsed events.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from a2rl.records import ExecEvent

# argv is matched string by string (a quoted argument may hold `], ` itself: a lazy `.*?\]` would
# end the list there and drop the arguments after it); strace marks a string cut at -s and a list
# cut at its length limit with `...`.
_ARGV = r'\[((?:"(?:[^"\\]|\\.)*"(?:\.\.\.)?|\.\.\.|, )*)\]'
_EXEC = re.compile(r'^(\d+)\s+(\d+\.\d+)\s+execve\("((?:[^"\\]|\\.)*)", ' + _ARGV
                   + r'\.?\.?\.?, .*\) = (\S+)')
_EXIT = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+\+\+\+ (?:exited with (\d+)|killed by (SIG\w+))")
_ARG = re.compile(r'"((?:[^"\\]|\\.)*)"')
_SIGNALS = {"SIGHUP": 1, "SIGINT": 2, "SIGKILL": 9, "SIGSEGV": 11, "SIGPIPE": 13, "SIGTERM": 15}


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), s)


_UNFINISHED = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*?) <unfinished \.\.\.>$")
_RESUMED = re.compile(r"^(\d+)\s+\d+\.\d+\s+<\.\.\. \w+ resumed>(.*)$")


def join_unfinished(text: str) -> list[str]:
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


class ExecLogReader:
    """`parse_exec_log` fed piece by piece (the log of a running agent, read as it grows): each
    line is parsed once. A call strace split is parsed when it resumes: its process is inside
    that call until then, so no event of that process comes between."""

    def __init__(self, t0: float, *, hide: Sequence[Sequence[str]] = ()) -> None:
        self.t0, self.hide = t0, [list(h) for h in hide if h]
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
            argv = [_unescape(a) for a in _ARG.findall(args)]
            if any(argv[:len(h)] == h for h in self.hide):
                return
            prev = self._by_pid.get(pid)
            start = prev.start_s if prev else round(ts - self.t0, 3)
            # A process that exec's again (shims, `exec "$@"`) keeps its start, changes program.
            self._by_pid[pid] = ExecEvent(pid=pid, start_s=start, end_s=None, exit_code=None,
                                          program=_unescape(program), argv=argv)
        elif m := _EXIT.match(line):
            pid, ts = int(m[1]), float(m[2])
            ev = self._by_pid.pop(pid, None)
            if ev is None:
                return
            ev.end_s = round(ts - self.t0, 3)
            ev.exit_code = int(m[3]) if m[3] is not None else -_SIGNALS.get(m[4], 0)
            self._done.append(ev)


def read_exec_events(run_dir: Path) -> list[ExecEvent] | None:
    """None when the run was not traced."""
    path = run_dir / "agent" / "exec.jsonl"
    if not path.exists():
        return None
    return [ExecEvent.model_validate_json(line) for line in path.read_text().splitlines()
            if line.strip()]
