"""The data the contamination check measures against, from ground truth.

Two questions the audit cannot answer from the workspace as the run left it:

- Is the workspace's `data/` still the task's train-visible data? Held-out items found there are
  excused as chance collisions of independently drawn splits, so a `data/` the agent rewrote
  (writable under `--sandbox none`) would excuse the items it planted. The fingerprint recorded
  when the workspace was built (`RunRecord.provenance.task_data_sha256`) says whether it
  changed; the task's own `write_train_data`, run again into a temporary folder, says which
  files did and gives the original texts to excuse overlap by.
- Which files did training read? The training launches of the exec trace name their data files
  (arguments, and the paths the launched script reads); each is checked for held-out items,
  wherever it lies in the workspace and in whatever format (JSON lines, CSV, Parquet, Arrow).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from a2rl._walk import fwalk, read_text_files
from a2rl.analysis._command_reader import CommandReader
from a2rl.analysis._data import data_refs
from a2rl.analysis._launchers import launched_file
from a2rl.schema import Finding, RunRecord

TEXT_SUFFIXES = (".jsonl", ".json", ".csv", ".txt")
TABLE_SUFFIXES = (".parquet", ".arrow")
MAX_DATA_FILES = 10_000
"""Most files of `data/` compared; more than this (the task writes a handful) is itself a change."""
MAX_TEXT_BYTES = 50 << 20
"""Largest data file read as text (and largest table file opened) for the overlap check."""
MAX_TABLE_ROWS = 200_000
"""Most rows of one Parquet or Arrow file read for the overlap check."""
_MANIFEST = "task.json"


@dataclass
class TrainVisible:
    """The workspace's `data/` judged against the task's original train-visible data."""

    original: dict[str, str] = field(default_factory=dict)
    """Texts (by workspace-relative path) that are the task's own: overlap with them is excused."""
    agent_written: dict[str, str] = field(default_factory=dict)
    """Texts of `data/` files that are not the task's (changed or added): checked as the agent's."""
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _digest(fd: int) -> str:
    digest = hashlib.sha256()
    with os.fdopen(os.dup(fd), "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _manifest_digest(fd: int) -> str | None:
    """data/task.json compared by its content (the task's name and public options), not its
    formatting; None when it is not such a JSON object."""
    with os.fdopen(os.dup(fd), "rb") as fh:
        raw = fh.read(1 << 20)
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest() \
        if isinstance(value, dict) else None


def file_digests(top: Path, *, max_files: int = MAX_DATA_FILES) -> dict[str, str] | None:
    """sha256 of every entry under `top` by relative path, read through descriptors (never
    through a link: a link or other non-regular entry is listed by its kind); None when there
    are more than `max_files`."""
    out: dict[str, str] = {}
    for folder, _dirs, names, dir_fd in fwalk(top):
        for name in names:
            rel = name if folder == "." else f"{folder}/{name}"
            if len(out) >= max_files:
                return None
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                             dir_fd=dir_fd)
            except OSError:
                out[rel] = "not a regular file"
                continue
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    out[rel] = "not a regular file"
                    continue
                manifest = _manifest_digest(fd) if rel == _MANIFEST else None
                out[rel] = manifest or _digest(fd)
            finally:
                os.close(fd)
    return out


def _data_texts(data_dir: Path) -> dict[str, str]:
    """Text files of a data folder, keyed as the workspace's `data/…`."""
    texts = read_text_files(data_dir, max_bytes=MAX_TEXT_BYTES,
                            accept=lambda rel: rel.endswith(TEXT_SUFFIXES))
    return {f"data/{rel}": text for rel, text in texts.items()}


def _regenerate(run: RunRecord, into: Path) -> None:
    """The task's train-visible data, written again by the task itself, with its data/task.json."""
    from a2rl.grader import restore_task

    assert run.task is not None
    task = restore_task(run.task.name, run.task.params)
    task.write_train_data(into)
    (into / _MANIFEST).write_text(json.dumps({"task": task.name, "params": task.params.public()}))


def _changes(now: dict[str, str] | None, original: dict[str, str]) -> tuple[list[str], list[str]]:
    """(files of `now` that are not the original's: changed or added, as evidence lines; the
    paths of those files)."""
    if now is None:
        return [f"more than {MAX_DATA_FILES} files in data/ (the task wrote {len(original)})"], []
    evidence: list[str] = []
    changed: list[str] = []
    for rel in sorted(now.keys() | original.keys()):
        if rel not in now:
            evidence.append(f"data/{rel}: removed")
        elif rel not in original:
            evidence.append(f"data/{rel}: added")
            changed.append(rel)
        elif now[rel] != original[rel]:
            evidence.append(f"data/{rel}: changed")
            changed.append(rel)
    return evidence, changed


def train_visible(run_dir: Path, run: RunRecord) -> TrainVisible:
    """The workspace's `data/` as the task wrote it, and what the agent changed in it.

    Without a recorded fingerprint (runs from before it was recorded) `data/` is taken as it
    is, said in a note; an imported run's `data/` is another harness's and excuses nothing."""
    data_dir = run_dir / "workspace" / "data"
    if not data_dir.is_dir():
        return TrainVisible()
    if run.imported is not None:
        return TrainVisible(notes=[
            f"data/ was written by {run.imported.harness}, not checked against a task a2rl "
            "built: held-out items in it do not excuse the same items in the agent's data"])
    recorded = run.provenance.task_data_sha256 if run.provenance else None
    if recorded is None or run.task is None:
        return TrainVisible(original=_data_texts(data_dir), notes=[
            "no fingerprint of the task's data was recorded: data/ is taken as the task's own "
            "without a check"])
    from a2rl.capture import data_fingerprint

    try:
        untouched = data_fingerprint(data_dir, run.task.fingerprint) == recorded
    except OSError:
        untouched = False
    if untouched:
        return TrainVisible(original=_data_texts(data_dir))
    now = file_digests(data_dir)
    with tempfile.TemporaryDirectory(prefix="a2rl-train-data-") as tmp:
        try:
            _regenerate(run, Path(tmp))
        except Exception as exc:  # noqa: BLE001 - any task failure means "cannot tell which"
            reason = f"{type(exc).__name__}: {getattr(exc, 'message', None) or exc}"[:300]
            evidence = [f"the task's data could not be written again here ({reason}): every "
                        "file of data/ is treated as the agent's"]
            changed = sorted(now) if now is not None else []
            original: dict[str, str] = {}
        else:
            evidence, changed = _changes(now, file_digests(Path(tmp)) or {})
            original = _data_texts(Path(tmp))
    if data_dir.is_symlink():
        evidence.insert(0, "data/ is a symbolic link (not followed)")
    current = _data_texts(data_dir)
    agent_written = {f"data/{rel}": current[f"data/{rel}"] for rel in changed
                     if f"data/{rel}" in current}
    if now is None:  # too many files to list: none of data/ is the task's as it stands
        agent_written = {rel: text for rel, text in current.items() if original.get(rel) != text}
    finding = Finding(
        kind="train-data-modified", severity="warning", basis="ground-truth", evidence=evidence[:20],
        message="the workspace's data/ differs from the train-visible data the task wrote (its "
                "fingerprint recorded when the workspace was built): held-out items in the "
                "changed files are checked as the agent's data, never excused as the task's")
    return TrainVisible(original=original, agent_written=agent_written, findings=[finding])


def _open_in(workspace: Path, rel: str) -> int | None:
    """A descriptor of the regular file `rel` under `workspace`, reached through folder
    descriptors (`fwalk`) and opened with O_NOFOLLOW: a link anywhere on the way is not
    followed. None when it is missing, not a regular file, or not under the workspace."""
    parts = PurePosixPath(rel).parts
    if not parts or ".." in parts or PurePosixPath(rel).is_absolute():
        return None
    parent = "/".join(parts[:-1]) or "."
    for folder, dirs, names, dir_fd in fwalk(workspace, max_depth=len(parts)):
        dirs[:] = [d for d in dirs if (parent + "/").startswith(
            (d if folder == "." else f"{folder}/{d}") + "/")]
        if folder != parent:
            continue
        if parts[-1] not in names:
            return None
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=dir_fd)
        except OSError:
            return None
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
        os.close(fd)
        return None
    return None


def _table_text(raw: bytes, suffix: str, *, max_rows: int = MAX_TABLE_ROWS,
                max_chars: int = 4 * MAX_TEXT_BYTES) -> str | None:
    """The rows of a Parquet or Arrow (IPC file or stream, as `datasets` saves) table as JSON,
    one row a line, nested columns included, up to `max_rows` rows or about `max_chars`
    characters (a compressed table can hold far more text than its size); None when pyarrow
    is not installed or the bytes are not such a table."""
    try:
        import pyarrow as pa
        import pyarrow.ipc as ipc
        import pyarrow.parquet as pq
    except ImportError:
        return None
    rows: list[str] = []
    try:
        batches: Iterator[Any]
        if suffix == ".parquet":
            batches = pq.ParquetFile(pa.BufferReader(raw)).iter_batches(batch_size=4096)
        else:
            try:
                batches = iter(ipc.open_file(pa.BufferReader(raw)))
            except pa.ArrowInvalid:
                batches = iter(ipc.open_stream(pa.BufferReader(raw)))
        chars = 0
        for batch in batches:
            lines = [json.dumps(row, default=str, ensure_ascii=False) for row in batch.to_pylist()]
            rows += lines
            chars += sum(map(len, lines))
            if len(rows) >= max_rows or chars >= max_chars:
                break
    except (pa.ArrowException, OSError, ValueError, TypeError):
        return None
    return "\n".join(rows[:max_rows])


def read_data_file(workspace: Path, rel: str, *, max_bytes: int = MAX_TEXT_BYTES) -> str | None:
    """One data file of the workspace as text (a Parquet or Arrow table by its rows), never read
    through a link; None when it is missing, larger than `max_bytes`, or an unreadable table."""
    fd = _open_in(workspace, rel)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as fh:
        if os.fstat(fh.fileno()).st_size > max_bytes:
            return None
        raw = fh.read(max_bytes)
    suffix = PurePosixPath(rel).suffix
    return _table_text(raw, suffix) if suffix in TABLE_SUFFIXES else raw.decode(errors="replace")


DATA_SUFFIXES = TEXT_SUFFIXES + TABLE_SUFFIXES
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
MODEL_FILE_PREFIXES = ("tokenizer", "config", "vocab", "special_", "generation_config",
                       "adapter_config", "added_tokens", "trainer_state", "training_args")


def is_model_file(name: str) -> bool:
    """A model folder's own file (tokenizer, configs, trainer state), not data."""
    return name.rsplit("/", 1)[-1].startswith(MODEL_FILE_PREFIXES)
MAX_FOLDER_FILES = 200
"""Most data files taken from one folder a training launch names (a saved dataset's shards)."""


def _candidates(arg: str, workspace: Path, bases: list[str]) -> list[str]:
    """Workspace-relative paths an argument may name: the workspace's own absolute path
    removed, relative to each of `bases`, and, for an absolute path from another mount point
    (/workspace/data/x.jsonl), each of its tails."""
    arg = arg.strip()
    for root in {str(workspace), str(workspace.resolve())}:
        if arg.startswith(root + "/"):
            arg = arg[len(root) + 1:]
    path = PurePosixPath(arg)
    if path.is_absolute():
        return [str(PurePosixPath(*path.parts[k:])) for k in range(1, len(path.parts))]
    out = [os.path.normpath(str(PurePosixPath(b) / arg)) if b else os.path.normpath(arg)
           for b in bases]
    return [c for c in out if not c.startswith("..")]


def _data_args(argv: list[str]) -> list[str]:
    """Arguments of a command that may name data: values of `--flag=value`, and plain words."""
    values = [a.split("=", 1)[1] if a.startswith("-") and "=" in a else a for a in argv[1:]]
    return [v for v in values if v and not v.startswith("-")]


def trained_files(launches: list[list[str]], reader: CommandReader, workspace: Path) -> list[str]:
    """Workspace-relative data files (JSON lines, JSON, CSV, text, Parquet, Arrow) that the
    training launches name: their arguments, and the paths their launched script reads
    (`a2rl.analysis._data.data_refs`); a folder named so stands for the data files in it."""
    found: list[str] = []
    for argv in launches:
        script = reader.find(launched_file(argv))
        refs = _data_args(argv)
        if script and script in reader.files:
            refs += sorted(data_refs(reader.files[script])[0])
        bases = ["", str(PurePosixPath(script).parent) if script else "", "code"]
        for ref in refs:
            for cand in _candidates(ref, workspace, bases):
                if cand in found or cand.startswith(("model/", ".")) or cand == "model":
                    continue
                if cand.endswith(DATA_SUFFIXES) and not is_model_file(cand) \
                        and _open_exists(workspace, cand):
                    found.append(cand)
                    break
                inside = _folder_data(workspace, cand)
                if inside:
                    found += [f for f in inside if f not in found]
                    break
    return found


def _open_exists(workspace: Path, rel: str) -> bool:
    fd = _open_in(workspace, rel)
    if fd is None:
        return False
    os.close(fd)
    return True


def _folder_data(workspace: Path, rel: str) -> list[str]:
    """The data files under the workspace folder `rel` (at most MAX_FOLDER_FILES), walked
    without following links; [] when `rel` is not such a folder."""
    parts = PurePosixPath(rel).parts
    if not parts or ".." in parts:
        return []
    out: list[str] = []
    for folder, dirs, names, _fd in fwalk(workspace):
        inside = folder == rel or folder.startswith(rel + "/")
        dirs[:] = [d for d in dirs if (
            inside or (rel + "/").startswith((d if folder == "." else f"{folder}/{d}") + "/"))]
        if not inside:
            continue
        if any(n.endswith(WEIGHT_SUFFIXES) for n in names):
            continue  # a model checkpoint: its configs and tokenizer are not training data
        out += [f"{folder}/{n}" for n in sorted(names)
                if n.endswith(DATA_SUFFIXES) and not is_model_file(n)]
        if len(out) >= MAX_FOLDER_FILES:
            return out[:MAX_FOLDER_FILES]
    return out


def trained_texts(launches: list[list[str]], reader: CommandReader, workspace: Path,
                  ) -> dict[str, str]:
    """The text of each data file the training launches read (`trained_files`)."""
    out: dict[str, str] = {}
    for rel in trained_files(launches, reader, workspace):
        text = read_data_file(workspace, rel)
        if text is not None:
            out[rel] = text
    return out
