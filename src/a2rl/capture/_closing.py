"""Closing a run's record when its own storage fails, and closing it within a deadline.

`RecordSlot` owns `run.json`, and the inodes held back for the records written after the agent
is gone (`reserve_inodes`, `free_inodes`: out of inodes, a step that needs a new file would
otherwise lose its record). Every write is atomic (temporary file + rename). When the
temporary file cannot be created or filled (no inode, no byte, a quota), the record is
rewritten in place through a descriptor held on the existing `run.json` (an existing inode
needs no allocation) when it fits the blocks that file already holds, padded with whitespace
so a shorter record never leaves old bytes behind it; otherwise the reserve file `.closing`
(allocated at run start) is removed to free its inode and bytes and both ways are tried
again. The held descriptor also
makes an ordinary `mount -o remount,ro` of the runs filesystem fail (EBUSY) while the run is
open. A filesystem that is read-only all the same (an error remount) cannot take the record:
it is then written under `$A2RL_HOME/unclosed/` and named on stderr, for `a2rl runs repair`.

`bounded_close` runs the close work in a thread and waits for it under a deadline. A
SIGTERM/SIGHUP during the close shortens the deadline to a short grace and calls `on_signal`
(which kills the evaluation children, so waits on them end); a second signal ends the wait at
once. When the deadline passes the work is abandoned (a daemon thread stuck in a read never
blocks the exit) and `on_abandon` writes the closed record.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

from a2rl._util import atomic_write_text
from a2rl._walk import rmtree

RESERVE_NAME = ".closing"
RESERVE_BYTES = 512 * 1024
"""Bytes (and one inode) held back at run start for the closing record."""
INODE_RESERVE_NAME = ".closing-inodes"
INODE_RESERVE = 256
"""Empty files (inodes, no blocks) held back at run start for what the harness writes once the
agent is gone: agent/exec.jsonl, agent/events.jsonl, the last code snapshot, the analysis."""
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})


def storage_failure(exc: BaseException) -> bool:
    """Whether `exc` is the run's storage refusing a write (full, over quota, read-only)."""
    return isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS


class RecordSlot:
    """`run.json` of one run, written so that a closing record always lands (see module)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.reserve = path.parent / RESERVE_NAME
        self.sealed = False  # the closed record is written; later writes are dropped
        self.fallback: Path | None = None  # where the record went when the run dir refused it
        self._fd = -1
        self._size = 0
        self._lock = threading.Lock()

    def reserve_space(self) -> None:
        """Allocate the reserve file (real blocks: zeros written, not a sparse file)."""
        try:
            fd = os.open(self.reserve, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError:
            return  # no room even now: the in-place rewrite is what is left
        try:
            os.write(fd, b"\0" * RESERVE_BYTES)
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

    def reserve_inodes(self) -> None:
        """Hold back `INODE_RESERVE` inodes in `.closing-inodes/` (as many as there are)."""
        folder = self.path.parent / INODE_RESERVE_NAME
        try:
            folder.mkdir(mode=0o700)
            for i in range(INODE_RESERVE):
                os.close(os.open(folder / str(i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except OSError:
            return  # what could be held back is; the rest of the run is not held up

    def free_inodes(self) -> None:
        free_inodes(self.path.parent)

    def release(self) -> None:
        """Remove the reserves (a closed run needs them no more)."""
        with contextlib.suppress(OSError):
            self.reserve.unlink()
        self.free_inodes()

    def write(self, text: str, *, final: bool = False) -> None:
        """Write the record; `final` seals it. Raises OSError only for a failure that is not
        the storage's (a wrong path, permissions)."""
        with self._lock:
            if self.sealed:
                return
            self._write(text)
            if final:
                self.sealed = True
                self.release()

    def seal(self, text: str) -> None:
        """Write the closed record even while another thread is stuck in a write (the lock is
        waited for a bounded time only)."""
        got = self._lock.acquire(timeout=5)
        try:
            self._write(text)
            self.sealed = True
            self.release()
        finally:
            if got:
                self._lock.release()

    def _write(self, text: str) -> None:
        data = text.encode()
        errors: list[OSError] = []
        for release in (False, True):
            if release:
                self.release()
            try:
                atomic_write_text(self.path, text)
                self._hold()
                return
            except OSError as exc:
                if not storage_failure(exc):
                    raise
                errors.append(exc)
            try:
                # before the reserve goes: only into blocks run.json already has (a write that
                # needs no new block cannot fail half-way for want of one)
                if self._rewrite_in_place(data, allocated_only=not release):
                    return
            except OSError as exc:
                if not storage_failure(exc):
                    raise
                errors.append(exc)
        self._write_elsewhere(text, errors[-1])

    def _hold(self) -> None:
        """A descriptor on the current run.json (a rename replaced the inode)."""
        old, self._fd = self._fd, -1
        if old >= 0:
            os.close(old)
        try:
            self._fd = os.open(self.path, os.O_RDWR)
            self._size = os.fstat(self._fd).st_size
        except OSError:
            self._fd = -1

    def _rewrite_in_place(self, data: bytes, *, allocated_only: bool) -> bool:
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_RDWR)  # exists: no inode to allocate
            self._size = os.fstat(self._fd).st_size
        if allocated_only and max(len(data), self._size) > os.fstat(self._fd).st_blocks * 512:
            return False
        # JSON allows trailing whitespace: pad to the old length, so a crash between the write
        # and the truncation never leaves a fragment of the longer old record behind
        padded = data + b" " * max(0, self._size - len(data))
        view = memoryview(padded)
        offset = 0
        while offset < len(view):
            offset += os.pwrite(self._fd, view[offset:], offset)
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, len(data))
        os.fsync(self._fd)
        self._size = os.fstat(self._fd).st_size
        return True

    def _write_elsewhere(self, text: str, exc: OSError) -> None:
        from a2rl._paths import a2rl_home

        name = "-".join(self.path.parent.parts[-2:]) + "-run.json"
        try:
            target = a2rl_home() / "unclosed" / name
            atomic_write_text(target, text)
            self.fallback = target
            where = f"the record was written to {target}"
        except OSError:
            where = "no copy could be written anywhere"
        print(f"a2rl: cannot write {self.path} ({exc.strerror}); {where}. Fix the run "
              f"directory's filesystem, then close the run with `a2rl runs repair "
              f"{self.path.parent}`", file=sys.stderr, flush=True)

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)


def free_inodes(run_dir: Path, count: int | None = None) -> None:
    """Give `count` (None: all) of the inodes `RecordSlot.reserve_inodes` held back in `run_dir`
    to the closing steps, once the agent is gone (its files can no longer take them). Half go
    when the agent exits (exec trace, events, the last snapshot), the rest when the record is
    sealed (the analysis): a step that fails half-way cannot starve the ones after it."""
    folder = run_dir / INODE_RESERVE_NAME
    with contextlib.suppress(OSError):
        if count is None:
            rmtree(folder)
            return
        for name in sorted(os.listdir(folder))[:count]:
            os.unlink(folder / name)


HANDLED = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def _signals(on_signal: Callable[[int], None]) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        on_signal(signum)

    previous = {sig: signal.signal(sig, handler) for sig in HANDLED}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def bounded_close(work: Callable[[], None], *, deadline_s: float, grace_s: float,
                  on_signal: Callable[[], object], on_abandon: Callable[[str], None]) -> bool:
    """Run `work` (closing the run) under `deadline_s`; see the module. True when it ended by
    itself. An exception in `work` is raised here."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=target, name="a2rl-close", daemon=True)
    deadline = [time.monotonic() + deadline_s]
    signals: list[int] = []

    def got(signum: int) -> None:
        signals.append(signum)
        if len(signals) == 1:
            deadline[0] = min(deadline[0], time.monotonic() + grace_s)
        else:
            deadline[0] = time.monotonic()

    with _signals(got):
        thread.start()
        killed = False
        while thread.is_alive() and time.monotonic() < deadline[0]:
            try:
                if signals and not killed:
                    killed = True
                    with contextlib.suppress(Exception):
                        on_signal()
                thread.join(timeout=0.1)
            except KeyboardInterrupt:  # Ctrl-C during the close: like SIGTERM
                got(signal.SIGINT)
        if thread.is_alive():
            name = signal.Signals(signals[-1]).name if signals else None
            on_abandon(f"closing the run did not finish within {deadline_s:.0f} s"
                       if name is None else
                       f"closing the run was cut short by {name} ({len(signals)} signal(s))")
            return False
    if failure:
        raise failure[0]
    return True
