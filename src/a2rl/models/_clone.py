"""Copying checkpoint files at the cost of metadata where the file system allows it.

On XFS (made with reflink=1) and btrfs a copy-on-write clone (the `FICLONE` ioctl) makes a new,
independent file that shares the source's extents: no data is written, and a later write to
either file gives that file its own copy of the changed blocks, so the clone keeps the bytes it
had when it was made. Elsewhere (ext4, tmpfs, NFS, across file systems) the bytes are copied.
"""

from __future__ import annotations

import errno
import fcntl
import shutil
from pathlib import Path
from typing import Literal

FICLONE = 0x40049409
"""`_IOW(0x94, 9, int)` from linux/fs.h: clone all of the source descriptor's file."""
_NO_CLONE = (errno.EOPNOTSUPP, errno.ENOTTY, errno.EXDEV, errno.EINVAL, errno.EBADF,
             errno.ENOSYS, errno.EPERM, errno.ETXTBSY)
"""What the ioctl answers where a clone cannot be made (not supported, another file system, a
file that is not a regular one): the caller copies instead."""

CopyMethod = Literal["reflink", "copy"]


def clone_fd(src_fd: int, dst_fd: int) -> bool:
    """Make the file open at `dst_fd` (empty, writable) a copy-on-write clone of the one at
    `src_fd`. False when the file system cannot (the destination is unchanged)."""
    try:
        fcntl.ioctl(dst_fd, FICLONE, src_fd)
    except OSError as exc:
        if exc.errno in _NO_CLONE:
            return False
        raise
    return True


def clone_or_copy(src: Path, dst: Path) -> CopyMethod:
    """Copy the file `src` (symlinks followed) to the new file `dst`: a clone where the file
    system can make one, otherwise the bytes."""
    with open(src, "rb") as reader, open(dst, "xb") as writer:
        if clone_fd(reader.fileno(), writer.fileno()):
            return "reflink"
        shutil.copyfileobj(reader, writer, 1 << 22)
    return "copy"

