"""`a2rl runs rm` / `a2rl runs prune`: delete recorded runs, never one that is still live.

A run is live while its record is open (no `ended_at`) and its harness process (`harness_pid`,
checked to be an a2rl process, as `a2rl runs repair` does) is alive. An open record whose
harness is gone is a dead run: it can be removed (or first closed with `a2rl runs repair`).
A `multi` run is removed whole: every task's run directory and the shared runs/multi/<id>/.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl.runner._lifecycle import _alive, _is_a2rl
from a2rl.runner._records import RunRecord


@dataclass(frozen=True)
class RunEntry:
    """One run directory and what `rm`/`prune` decide from."""

    path: Path
    record: RunRecord | None
    """None when run.json cannot be read (a damaged or half-written run)."""

    @property
    def live(self) -> bool:
        r = self.record
        if r is None or r.ended_at is not None or r.harness_pid is None:
            return False
        return r.harness_pid == os.getpid() or (_alive(r.harness_pid)
                                                and _is_a2rl(r.harness_pid))

    @property
    def failed(self) -> bool:
        """Failed, unreadable, or open with its harness gone (died without closing)."""
        r = self.record
        return r is None or r.status == "failed" or (r.ended_at is None and not self.live)

    @property
    def created(self) -> dt.datetime | None:
        if self.record is not None:
            return self.record.created_at
        try:
            return dt.datetime.fromtimestamp(self.path.stat().st_mtime, dt.UTC)
        except OSError:
            return None

    def label(self) -> str:
        r = self.record
        state = "unreadable" if r is None else r.status + (
            "" if r.ended_at is not None or self.live else ", harness gone")
        return f"{self.path.parent.name}/{self.path.name} ({state})"


def entry(path: Path) -> RunEntry:
    try:
        record: RunRecord | None = RunRecord.model_validate_json((path / "run.json").read_text())
    except (OSError, ValueError):
        record = None
    return RunEntry(path, record)


def all_runs(runs_dir: Path) -> list[RunEntry]:
    if not runs_dir.is_dir():
        return []
    return [entry(p.parent) for p in sorted(runs_dir.glob("*/*/run.json"))]


def group(e: RunEntry, runs_dir: Path) -> list[Path]:
    """Every folder removing `e` removes: a multi run's task runs and its shared root."""
    r = e.record
    if r is None or not r.config.tasks:
        return [e.path]
    root = runs_dir / "multi" / r.run_id
    paths = [runs_dir / t / r.run_id for t in r.config.tasks]
    return [p for p in [*paths, root] if p.exists() or p.is_symlink()]


def _make_writable(path: Path) -> None:
    # workspaces hold read-only model/ and data/ copies; snapshots are read-only too
    for root, dirs, _ in os.walk(path):
        for d in dirs:
            p = Path(root) / d
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | stat.S_IWUSR | stat.S_IXUSR | stat.S_IRUSR)
    path.chmod(path.stat().st_mode | stat.S_IWUSR | stat.S_IXUSR | stat.S_IRUSR)


def remove(paths: list[Path]) -> None:
    for p in paths:
        if p.is_symlink():
            p.unlink()
        elif p.exists():
            _make_writable(p)
            shutil.rmtree(p)


def parse_age(text: str) -> dt.timedelta:
    from a2rl._util import parse_duration

    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise A2RLError(f"--older-than {text!r}: {exc}", "e.g. --older-than 7d, 12h or 30m"
                        ) from exc
    if seconds <= 0:
        raise A2RLError(f"--older-than {text!r} is not a positive age", "e.g. --older-than 7d")
    return dt.timedelta(seconds=seconds)


def select_prune(runs: list[RunEntry], *, failed: bool, older_than: dt.timedelta | None,
                 task: str | None = None) -> list[RunEntry]:
    """Runs matching every filter given; live runs never."""
    now = dt.datetime.now(dt.UTC)
    out = []
    for e in runs:
        if e.live:
            continue
        if failed and not e.failed:
            continue
        if task is not None and e.path.parent.name != task:
            continue
        if older_than is not None:
            created = e.created
            if created is None or now - created.astimezone(dt.UTC) < older_than:
                continue
        out.append(e)
    return out
