"""Small helpers shared by several modules (atomic writes, hashing, time, lazy exports, this
process's children)."""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a temporary file + rename so a crash never leaves a half-written record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def stable_hash(obj: Any) -> str:
    """sha256 of a JSON-serialisable object with sorted keys (for cache keys)."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def parse_duration(text: str) -> float:
    """'12h', '90m', '45s', '1h30m' or plain seconds -> seconds. Raises ValueError."""
    text = text.strip().lower()
    if not text:
        raise ValueError("empty duration")
    try:
        return float(text)
    except ValueError:
        pass
    units = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
    total, number = 0.0, ""
    for ch in text:
        if ch.isdigit() or ch == ".":
            number += ch
        elif ch in units and number:
            total += float(number) * units[ch]
            number = ""
        else:
            raise ValueError(f"cannot parse duration {text!r}")
    if number:
        raise ValueError(f"duration {text!r} has a number without a unit (use h, m or s)")
    return total


def lazy_exports(module: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """A package's `__getattr__` (PEP 562): each public name in `homes` is imported from the
    module named there on first use and kept in the package; any other name is an
    AttributeError."""
    def attribute(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[module], name, value)
        return value
    return attribute


def descendants(pid: int) -> list[int]:
    """All descendants of `pid` (children first), from /proc/<pid>/task/*/children."""
    out: list[int] = []
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{current}/task/{tid}/children") as fh:
                    kids = [int(x) for x in fh.read().split()]
            except (OSError, ValueError):
                continue
            out.extend(kids)
            stack.extend(kids)
    return out


_KEPT: set[int] = set()


def keep_process(pid: int) -> None:
    """Mark a child this process started that serves every run in it (a tracker's service):
    the cleanup after one run spares it, although it may hold files in that run's folder."""
    _KEPT.add(pid)


def kept_processes() -> frozenset[int]:
    return frozenset(_KEPT)
