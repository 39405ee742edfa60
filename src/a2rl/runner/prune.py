"""`a2rl runs rm` / `a2rl runs prune`: delete recorded runs, never one that is still live.

A run is live while its record is open (no `ended_at`) and its harness process (`harness_pid`,
checked to be an a2rl process, as `a2rl runs repair` does) is alive. An open record whose
harness is gone is a dead run: it can be removed (or first closed with `a2rl runs repair`).
A `multi` run is removed whole: every task's run directory and the shared runs/multi/<id>/.

A record is input, not authority: only real folders two levels inside the runs dir are
deleted (never through a symbolic link, never a folder a record's task names or run id would
place elsewhere), and each refusal is named.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl._walk import rmtree_at
from a2rl.grader import STORE_DIR, collect_blobs
from a2rl.runner._lifecycle import _alive, _is_a2rl
from a2rl.schema import RunRecord


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


def _folder_name(text: str) -> bool:
    """A record's task name or run id usable as one folder name (never `..`, `/`, control
    characters): records are input, and a path built from them must stay where it is put."""
    return bool(text) and text not in (".", "..") and "/" not in text and "\\" not in text \
        and "\0" not in text and len(text.encode()) <= 255 and text.isprintable()


def refusal(path: Path, runs_dir: Path) -> str | None:
    """Why `path` must not be deleted (None: it is a real run folder, two levels inside the
    runs dir, reached through no symbolic link)."""
    p = Path(os.path.abspath(path))
    for level in (p, p.parent):
        if level.is_symlink():
            return (f"{level} is a symbolic link (to {os.readlink(level)}): a2rl deletes only "
                    "real folders inside the runs dir; remove the link itself with `rm` if you "
                    "mean to")
    base = runs_dir.resolve()
    real = p.resolve()
    if real.parent.parent != base or not _folder_name(real.name) \
            or not _folder_name(real.parent.name):
        return (f"{p} is not a run folder inside the runs dir {base}; pass --runs-dir with the "
                "runs folder that holds it")
    return None


def group(e: RunEntry, runs_dir: Path) -> list[Path]:
    """Every folder removing `e` removes: itself, and a multi run's task runs and its shared
    root. The folders a record names are built from its task names and run id only when each
    is a plain folder name (`plan` says which were not)."""
    return [p for p, why in _group(e, runs_dir) if why is None]


def _group(e: RunEntry, runs_dir: Path) -> list[tuple[Path, str | None]]:
    r = e.record
    out: list[tuple[Path, str | None]] = [(e.path, None)]
    if r is None or not r.config.tasks:
        return out
    if not _folder_name(r.run_id):
        return [*out, (runs_dir / "multi" / r.run_id,
                       f"{e.path}/run.json names the multi run id {r.run_id!r}, no folder "
                       "name: its other task runs are not removed; remove them by path")]
    for name in [*r.config.tasks, "multi"]:
        p = runs_dir / name / r.run_id
        if not _folder_name(name):
            out.append((p, f"{e.path}/run.json names the task {name!r}, no folder name: "
                        "nothing is removed for it"))
        elif p != e.path and (p.exists() or p.is_symlink()):
            out.append((p, None))
    return out


def plan(entries: list[RunEntry], runs_dir: Path) -> tuple[list[Path], list[str]]:
    """The folders removing `entries` deletes (each checked by `refusal`), and why each folder
    that a record named or that was found is left alone."""
    paths: list[Path] = []
    refused: list[str] = []
    for e in entries:
        for p, why in _group(e, runs_dir):
            why = why or refusal(p, runs_dir)
            if why is not None:
                if why not in refused:
                    refused.append(why)
            elif p not in paths:
                paths.append(p)
    return paths, refused


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove(paths: list[Path], runs_dir: Path) -> list[str]:
    """Delete run folders inside `runs_dir`, each re-checked (`refusal`) and deleted through
    descriptors opened without following links, so a folder swapped for a link after the
    check is not followed; then the files of the runs folder's snapshot store that no
    remaining snapshot links to. Returns why each folder left in place was."""
    try:
        return _remove(paths, runs_dir)
    finally:
        collect_blobs(runs_dir / STORE_DIR)


def _remove(paths: list[Path], runs_dir: Path) -> list[str]:
    refused: list[str] = []
    base_fd = os.open(runs_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for p in paths:
            if not os.path.lexists(p):
                continue
            why = refusal(p, runs_dir)
            if why is not None:
                refused.append(why)
                continue
            real = p.resolve()
            try:
                parent_fd = os.open(real.parent.name, _DIR, dir_fd=base_fd)
            except FileNotFoundError:
                continue
            except OSError as exc:
                refused.append(f"{p}: its task folder cannot be opened as a real folder "
                               f"({exc.strerror})")
                continue
            try:
                try:
                    os.close(os.open(real.name, _DIR, dir_fd=parent_fd))
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    refused.append(f"{p} cannot be opened as a real folder ({exc.strerror})")
                    continue
                # any depth, no link followed; read-only folders (model/ bind point, data/,
                # snapshots) are made writable by their owner as they are emptied
                rmtree_at(parent_fd, real.name)
            finally:
                os.close(parent_fd)
    finally:
        os.close(base_fd)
    return refused


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
