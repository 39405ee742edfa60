"""Submission path rules and the snapshot that is evaluated.

The agent controls everything under `workspace/output/`, including symlinks, so every check is
made on what was actually opened: each file is opened without following a final symlink and its
real location is read back from /proc/self/fd before a byte is copied. The evaluation then runs
on the snapshot, which lives outside the workspace and cannot change under it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl.models import check_model_dir, weights_hash


class SubmissionRejected(A2RLError):
    """The submission breaks a rule; it is recorded as `rejected` and never evaluated."""


@dataclass(frozen=True)
class Snapshot:
    path: Path
    """Folder under run_dir/artifacts/ holding the copied checkpoint."""
    artifact_hash: str
    files_hash: str
    """sha256 over every copied file (names + bytes), for the audit trail."""
    n_bytes: int
    reused: bool
    """An identical snapshot already existed (same weights and files)."""


def resolve_submission(raw: object, workspace: Path) -> Path:
    """Apply the path rules; return the resolved folder inside workspace/output/."""
    if not isinstance(raw, str) or not raw.strip() or "\0" in raw:
        raise SubmissionRejected("model_path must be a non-empty string",
                                 'send {"model_path": "output/<your-model-dir>"}')
    output = (workspace / "output").resolve()
    candidate = Path(raw) if Path(raw).is_absolute() else workspace / raw
    real = Path(os.path.realpath(candidate))
    if not real.is_relative_to(output):
        raise SubmissionRejected(
            f"model_path {raw!r} resolves to {real}, which is outside {output}",
            "save the model under output/ (e.g. output/v1) and submit that folder; symlinks "
            "out of output/ are not followed")
    if not real.exists():
        raise SubmissionRejected(f"model_path {raw!r} does not exist", "check the path")
    if not real.is_dir():
        raise SubmissionRejected(f"model_path {raw!r} is a file, not a model folder",
                                 "submit the folder written by save_pretrained")
    return real


def _copy_checked(src: Path, dst: Path, output: Path, budget: int) -> tuple[int, bytes]:
    """Copy one file, refusing anything whose opened inode lies outside output/."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise SubmissionRejected(f"{src.name} is a symlink or cannot be opened ({exc.strerror})",
                                 "put real files (not symlinks) in the submitted folder") from exc
    try:
        st = os.fstat(fd)
        opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if not stat.S_ISREG(st.st_mode) or not opened.is_relative_to(output):
            raise SubmissionRejected(f"{src.name} is not a regular file inside output/",
                                     "put real files (not symlinks or devices) in the folder")
        if st.st_size > budget:
            raise SubmissionRejected("the submitted folder is larger than the size limit",
                                     "submit only the checkpoint files (no optimizer states)")
        digest = hashlib.sha256(src.name.encode() + b"\0")
        copied = 0
        with os.fdopen(os.dup(fd), "rb") as reader, dst.open("wb") as writer:
            while chunk := reader.read(1 << 22):
                copied += len(chunk)
                if copied > budget:
                    raise SubmissionRejected("the submitted folder grew past the size limit",
                                             "submit a folder that is not being written to")
                writer.write(chunk)
                digest.update(chunk)
        return copied, digest.digest()
    finally:
        os.close(fd)


def snapshot_submission(folder: Path, workspace: Path, artifacts_root: Path,
                        max_bytes: int) -> Snapshot:
    """Copy the checkpoint's top-level files out of the workspace, validate and hash the copy."""
    output = (workspace / "output").resolve()
    artifacts_root.mkdir(parents=True, exist_ok=True)
    staging = artifacts_root / f".staging-{uuid.uuid4().hex}"
    staging.mkdir()
    try:
        total = 0
        files_digest = hashlib.sha256()
        for entry in sorted(folder.iterdir()):
            if entry.is_dir() and not entry.is_symlink():
                continue  # sub-folders (trainer checkpoints, logs) are not part of the model
            n, digest = _copy_checked(entry, staging / entry.name, output, max_bytes - total)
            total += n
            files_digest.update(digest)
        try:
            check_model_dir(staging)
            artifact_hash = weights_hash(staging)
        except A2RLError as exc:
            raise SubmissionRejected(exc.message, exc.fix) from exc
        files_hash = files_digest.hexdigest()
        final = artifacts_root / f"{artifact_hash[:16]}-{files_hash[:8]}"
        reused = final.exists()
        if reused:
            shutil.rmtree(staging)
        else:
            os.replace(staging, final)
            for p in final.iterdir():
                p.chmod(0o444)
        return Snapshot(final, artifact_hash, files_hash, total, reused)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
