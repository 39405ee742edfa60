"""Typed reading and appending of the JSON and JSONL files a2rl persists."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from a2rl._errors import A2RLError
from a2rl._util import atomic_write_text

M = TypeVar("M", bound=BaseModel)


def read_jsonl(path: Path, model: type[M], *, skip_bad: bool = True) -> list[M]:
    """Every record of a JSONL file, in file order. A line that does not parse (a torn last line
    after a crash, or a line of another format) is skipped when `skip_bad`, else it is an error
    naming the file and the line."""
    return list(iter_jsonl(path, model, skip_bad=skip_bad))


def iter_jsonl(path: Path, model: type[M], *, skip_bad: bool = True) -> Iterator[M]:
    """`read_jsonl` one record at a time: a large file is never held whole."""
    with path.open(errors="replace") as fh:
        for number, raw in enumerate(fh, 1):
            raw = raw.strip()
            if not raw:
                continue
            try:
                record = model.model_validate_json(raw)
            except ValidationError as exc:
                if skip_bad:
                    continue
                raise A2RLError(f"{path}:{number} is not a valid {model.__name__} record: "
                                f"{exc.errors()[0].get('msg', exc)}",
                                "repair or remove that line; the other lines are kept") from exc
            yield record


def append_jsonl(path: Path, record: BaseModel) -> None:
    """Append one record as a line and fsync it. A previous line torn by a crash is closed first
    so the new line stays readable."""
    line = record.model_dump_json() + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = "\n" + line
        data = line.encode()
        try:
            written = os.write(fd, data)
            if written != len(data):  # a full disk took part of the line
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            os.fsync(fd)
        except OSError:
            # no torn line is left behind: the earlier lines stay the file's whole content
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def read_json(path: Path, model: type[M]) -> M:
    """One JSON record; a missing or malformed file is an error that says which and why."""
    if not path.exists():
        raise A2RLError(f"{path} does not exist", f"check the path; {model.__name__} is read from it")
    try:
        return model.model_validate_json(path.read_text())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise A2RLError(f"{path} is not a valid {model.__name__}: {where}: {first.get('msg')}",
                        "the file was written by another a2rl version or edited by hand; "
                        "`a2rl schema` prints the expected format") from exc


def write_json(path: Path, record: BaseModel) -> None:
    """Write atomically (temporary file + rename), so readers never see half a record."""
    atomic_write_text(path, record.model_dump_json(indent=2))
