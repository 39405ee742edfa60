"""The bubblewrap command line, built in one place for every bubblewrap sandbox: the agent's
(`a2rl.sandbox.backends.bwrap`, a `BwrapView` of its workspace) and the scorer's
(`scoring_command`: one model-written program, no workspace, no network).

Every such sandbox has its own user (uid `SANDBOX_UID`; nested user namespaces refused where
bwrap >= 0.8 can), PID, IPC, UTS and cgroup namespaces; an empty read-only root holding the
system folders and the Python environment read-only (`a2rl.sandbox._host`), with the system
secrets and the view's masks covered; a fresh /proc and minimal /dev; a private /tmp (with
`/tmp/home` for HOME). What differs is the view: the folders mounted beyond that, the working
folder, whether the network namespace is private, the size of /tmp, the devices passed in.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl.sandbox._host import SYSTEM_DIRS, interpreter_roots, mounted_roots, python_mounts
from a2rl.sandbox._masks import Masks, masked_system_paths, scoring_masks
from a2rl.sandbox._sandbox import SANDBOX_UID

SCORING_CWD = "/tmp"
"""The working folder of a scored program: its private tmpfs, the only writable place."""


@dataclass(frozen=True)
class Mount:
    """A host path shown inside the sandbox at `target`."""

    source: Path
    target: Path
    writable: bool = False


@dataclass(frozen=True)
class BwrapView:
    """What one bubblewrap sandbox shows beyond the view they all share."""

    workdir: Path | str
    """The working folder of the first process."""
    python: Sequence[Path]
    """The Python roots to show (those outside the system folders are mounted)."""
    mounts: Sequence[Mount] = ()
    """Further host paths, mounted in this order (a later one may lie inside an earlier one)."""
    hidden: Masks = field(default_factory=Masks)
    """Masks applied after every mount (already narrowed to what is mounted: `Masks.under`)."""
    private_network: bool = False
    """Its own network namespace (only its loopback) instead of the host's."""
    tmp_size: int | None = None
    """Bytes the /tmp tmpfs may hold (where bwrap >= 0.7 can bound it); None: unbounded."""
    devices: Sequence[str] = ()
    """Device nodes passed in (GPUs)."""


def find_bwrap() -> str | None:
    """The bubblewrap executable on PATH, or None."""
    return shutil.which("bwrap")


@functools.cache
def bwrap_help(executable: str) -> str:
    """`bwrap --help`, to use newer options only where they exist (Ubuntu 22.04 has 0.6)."""
    try:
        out = subprocess.run([executable, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout + out.stderr


def refuses_nested_userns(executable: str) -> bool:
    """Whether this bwrap can refuse nested user namespaces (`--disable-userns`, >= 0.8)."""
    return "--disable-userns" in bwrap_help(executable)


def system_mount_args() -> list[str]:
    """The system folders, read-only (symlinks such as /lib -> usr/lib are recreated as
    symlinks, not bound)."""
    args: list[str] = []
    for d in SYSTEM_DIRS:
        p = Path(d)
        if p.is_symlink():
            args += ["--symlink", str(p.readlink()), d]
        elif p.is_dir():
            args += ["--ro-bind", d, d]
    return args


def mask_args(masks: Masks) -> list[str]:
    """An empty tmpfs over each masked folder, /dev/null over each masked file, and the files
    revealed inside masked folders mounted back read-only."""
    args = [a for d in masks.dirs for a in ("--tmpfs", str(d))]
    args += [a for f in masks.files for a in ("--ro-bind", "/dev/null", str(f))]
    return args + [a for f in masks.reveal for a in ("--ro-bind", str(f), str(f))]


def bwrap_command(executable: str, view: BwrapView, argv: Sequence[str]) -> list[str]:
    """The command line that runs `argv` in a bubblewrap sandbox showing `view`."""
    args = [executable, "--die-with-parent", "--new-session",
            "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    if refuses_nested_userns(executable):
        args.append("--disable-userns")
    args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
             "--hostname", "a2rl-sandbox"]
    if view.private_network:
        args.append("--unshare-net")
    args += system_mount_args() + mask_args(masked_system_paths())
    args += ["--proc", "/proc", "--dev", "/dev"]
    if view.tmp_size is not None and "--size" in bwrap_help(executable):
        args += ["--size", str(view.tmp_size)]
    args += ["--tmpfs", "/tmp", "--dir", "/tmp/home"]
    for dev in view.devices:
        args += ["--dev-bind", dev, dev]
    # After the /tmp tmpfs: an interpreter that lives under /tmp (a CI checkout) stays visible.
    for root in python_mounts(view.python):
        args += ["--ro-bind", str(root), str(root)]
    for mount in view.mounts:
        args += ["--bind" if mount.writable else "--ro-bind", str(mount.source), str(mount.target)]
    args += mask_args(view.hidden)
    # The root is a tmpfs holding the mount points (the empty parents of every mount): make it
    # read-only, so that nothing outside the view's writable mounts and /tmp is writable.
    return args + ["--remount-ro", "/", "--chdir", str(view.workdir), "--", *argv]


def scoring_command(argv: Sequence[str] = (), *, tmp_size: int,
                    masks: Masks | None = None) -> list[str]:
    """The scorer's sandbox: the command line that runs `argv` (a model-written program's
    interpreter; empty: the prefix, ending in `--`) with no network at all (a network
    namespace holding only its own loopback), no workspace (the working folder is a private
    tmpfs of `tmp_size` bytes at `SCORING_CWD`, the only writable place), the interpreter's
    folders but not a2rl's source, and `masks` hidden (default `scoring_masks()`). Its
    process limits and process-creation policy are set by the program's launcher.
    A2RLError when bubblewrap is not installed."""
    executable = find_bwrap()
    if executable is None:
        raise A2RLError("bubblewrap (bwrap) is not installed",
                        "install it (Debian/Ubuntu: `apt-get install bubblewrap`) and enable "
                        "unprivileged user namespaces")
    python = interpreter_roots()
    hidden = (scoring_masks() if masks is None else masks).under(mounted_roots(python=python))
    view = BwrapView(workdir=SCORING_CWD, python=python, hidden=hidden, private_network=True,
                     tmp_size=tmp_size)
    return bwrap_command(executable, view, argv)
