"""The operator's console: its width, progress lines in logs, and agent text made safe to print.

Every string that the agent can influence (submission paths, error messages, config fields,
its own output) goes through `safe()` before it reaches a markup-interpreting print: control
and ANSI escape sequences are removed (no cursor moves, no overwritten lines, no fake colours)
and rich markup is escaped, so an agent cannot print a forged "✔ s0999 score 100.00" line on
the operator's console.
"""

from __future__ import annotations

import contextlib
import os
import re

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, TaskID

# CSI / OSC / other ESC sequences, then any remaining C0/C1 control character but tab.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


# Width of a console that is not a terminal (a Slurm log, a pipe): wide enough that no table
# cell is cut, since nobody resizes a log file.
_LOG_WIDTH = 100_000


class RunConsole(Console):
    """A console whose reader may go away: once its output is a closed pipe (`a2rl run … |
    head -1`), what it prints is dropped and the program goes on. Rich's own reaction ends the
    process (SystemExit), which would leave a run half-closed."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        # later writes to the same descriptor, by this console or by plain prints, and Python's
        # flush of stdout at exit, go nowhere instead of raising again
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.file.fileno())
            os.close(devnull)


def make_console(**kwargs: object) -> Console:
    """A console at the terminal's width, or at an unlimited width when stdout is not a terminal
    (a pipe, a log file: an inherited COLUMNS describes some other terminal), so
    `a2rl runs list | cat` prints every number whole. Output to a closed pipe is dropped."""
    console = RunConsole(**kwargs)  # type: ignore[arg-type]
    if not console.is_terminal:
        console = RunConsole(width=_LOG_WIDTH, **kwargs)  # type: ignore[arg-type]
    return console


def plain_text(text: str) -> str:
    """`text` without escape sequences and control characters (newlines become spaces; bidi
    overrides, which reorder what the operator sees, are removed)."""
    text = _ANSI.sub("", text)
    return _CONTROL.sub(lambda m: " " if m.group() in "\n\r\u2028\u2029" else "", text)


def clock(seconds: float | None) -> str:
    """A duration or an elapsed time as h:mm:ss (hours not capped at 24); "—" when unknown."""
    if seconds is None:
        return "—"
    s = max(0, round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def safe(value: object) -> str:
    """An agent-influenced value ready for a markup-interpreting print."""
    return escape(plain_text(str(value)))


class LineProgress(Progress):
    """A rich Progress for output that is not a terminal (a Slurm log, a pipe): rich draws
    nothing live there, so a 20-minute baseline would print nothing. This one writes a plain
    line per task when it starts, then at most every `every_s` seconds (or on reaching its
    total): `[12:03:10] scoring the baseline (arith): 40/200 (20%), 1m05s`."""

    def __init__(self, *columns: object, every_s: float = 30.0, **kwargs: object) -> None:
        super().__init__(*columns, **kwargs)  # type: ignore[arg-type]
        self.every_s = every_s
        self._printed: dict[TaskID, tuple[float, float | None]] = {}

    def start(self) -> None:
        return None  # no live display: the lines are printed as they come

    def stop(self) -> None:
        return None  # (rich would end with an empty line)

    def add_task(self, description: str, start: bool = True, total: float | None = 100.0,
                 completed: int = 0, visible: bool = True, **fields: object) -> TaskID:
        task_id = super().add_task(description, start=start, total=total, completed=completed,
                                   visible=visible, **fields)
        self._line(task_id, force=True)
        return task_id

    def update(self, task_id: TaskID, *, total: float | None = None,
               completed: float | None = None, advance: float | None = None,
               description: str | None = None, visible: bool | None = None,
               refresh: bool = False, **fields: object) -> None:
        super().update(task_id, total=total, completed=completed, advance=advance,
                       description=description, visible=visible, refresh=refresh, **fields)
        self._line(task_id)

    def remove_task(self, task_id: TaskID) -> None:
        self._printed.pop(task_id, None)
        super().remove_task(task_id)

    def _line(self, task_id: TaskID, force: bool = False) -> None:
        import time

        with self._lock:
            task = self._tasks.get(task_id)
            if task is None:
                return
            done, total = task.completed, task.total
            text = task.description
        now = time.monotonic()
        last, last_done = self._printed.get(task_id, (None, None))
        finished = total is not None and done >= total and last_done != done
        if not (force or finished or last is None or now - last >= self.every_s):
            return
        self._printed[task_id] = (now, done)
        elapsed = int(task.elapsed or 0)
        amount = (f"{done:.0f}/{total:.0f}" + (f" ({100 * done / total:.0f}%)" if total else "")
                  if total is not None else f"{done:.0f}" if done else "started")
        self.console.print(f"[{time.strftime('%H:%M:%S')}] {plain_text(text)}: {amount}, "
                           f"{elapsed // 60}m{elapsed % 60:02d}s", markup=False, highlight=False)


def progress_for(console: Console, *columns: object, every_s: float = 30.0,
                 **kwargs: object) -> Progress:
    """A live bar on a terminal, plain periodic lines anywhere else."""
    if console.is_terminal:
        return Progress(*columns, console=console, **kwargs)  # type: ignore[arg-type]
    kwargs.pop("transient", None)  # nothing to clear: the lines stay in the log
    return LineProgress(*columns, console=console, every_s=every_s, transient=True,
                        **kwargs)
