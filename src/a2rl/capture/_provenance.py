"""What makes a run reproducible beyond its config (`RunRecord.provenance`): the fingerprint of
the task's data, and the agent CLI's version line as it answered."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from a2rl._walk import fwalk

VERSION_CAP = 200
"""Most characters of a CLI's version line kept (it is the CLI's text)."""


def data_fingerprint(data_dir: Path, heldout_fingerprint: str) -> str:
    """sha256 over the train-visible data the agent gets (every file under `data_dir`: its path
    and bytes, in path order; symbolic links by their target's name, never followed) and the
    held-out items' fingerprint. The held-out part is the keyed `TaskInfo.fingerprint`, never a
    plain hash of the items: a generated test set is a function of a small seed, and a plain
    hash of it would let a reader find the seed by trying each."""
    digest = hashlib.sha256()
    entries: list[str] = []
    for folder, _dirs, names, _fd in fwalk(data_dir):
        entries += [name if folder == "." else f"{folder}/{name}" for name in names]
    for rel in sorted(entries):
        path = data_dir / rel
        digest.update(b"file\0" + rel.encode() + b"\0")
        if path.is_symlink():
            digest.update(b"link\0" + os.readlink(path).encode() + b"\0")
            continue
        if not path.is_file():
            continue
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        digest.update(b"\0")
    digest.update(b"heldout\0" + heldout_fingerprint.encode())
    return digest.hexdigest()


def version_line(output: str) -> str | None:
    """The first non-empty line a `--version` printed, printable characters only, capped."""
    for line in output.splitlines():
        text = "".join(ch for ch in line if ch.isprintable()).strip()
        if text:
            return text[:VERSION_CAP]
    return None
