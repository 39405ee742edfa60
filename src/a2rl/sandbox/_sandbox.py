"""OS-level isolation of the agent: bubblewrap, or an explicit, recorded `--no-sandbox`.

What the agent sees under bubblewrap: its workspace read-write (model/, data/ and the docs
read-only), the system and Python toolchain read-only, a private /tmp and HOME, its own PID
namespace, and GPU device nodes when present. It does not see the run directory (ledger,
artifacts, evaluation outputs), $A2RL_HOME (held-out seeds, caches), other runs or the
invoking user's home. It runs as an unprivileged uid in a user namespace, so file permissions
apply to it. Network: `full` shares the host's (the grader listens on loopback and is
token-protected; hosted drivers need the internet); `none` gives the sandbox its own network
namespace where only the relayed loopback ports (grader, local driver) answer.
"""

from __future__ import annotations

import glob
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from a2rl._errors import A2RLError
from a2rl.sandbox._bridge import SOCKET_DIR_IN_SANDBOX, HostBridge
from a2rl.workspace import READ_ONLY_ENTRIES

SandboxKind = Literal["bwrap", "none"]
NetworkPolicy = Literal["full", "none"]
SANDBOX_UID = 1000
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt")
# The user namespace maps the invoking uid to the agent's uid, so when a2rl runs as root every
# root-owned file that is mounted looks like the agent's own. Secrets under /etc are masked.
_MASKED_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")
_MASKED_DIRS = ("/etc/ssh", "/etc/ssl/private", "/etc/sudoers.d", "/etc/xdg/pip")


def system_mount_args(dirs: tuple[str, ...]) -> list[str]:
    """bwrap arguments that make `dirs` visible read-only (symlinks such as /lib -> usr/lib are
    recreated as symlinks, not bound)."""
    args: list[str] = []
    for d in dirs:
        p = Path(d)
        if p.is_symlink():
            args += ["--symlink", str(p.readlink()), d]
        elif p.is_dir():
            args += ["--ro-bind", d, d]
    return args


class Sandbox(Protocol):
    kind: SandboxKind
    sandboxed: bool

    def wrap(self, argv: list[str], *, workspace: Path, read_only: Sequence[Path] = (),
             bridge: HostBridge | None = None) -> list[str]:
        """The command line that runs `argv` inside the sandbox with cwd = workspace;
        `read_only` host folders become visible read-only; `bridge` (network none) relays
        its loopback ports into a private network namespace."""
        ...


@dataclass
class NoSandbox:
    """Runs the agent as a plain child process. Recorded as unsandboxed in run.json."""

    kind: SandboxKind = "none"
    sandboxed: bool = False

    def wrap(self, argv: list[str], *, workspace: Path, read_only: Sequence[Path] = (),
             bridge: HostBridge | None = None) -> list[str]:
        if bridge is not None:
            raise A2RLError("--network none needs the sandbox", "drop --no-sandbox")
        return list(argv)


def _python_roots() -> list[Path]:
    """Folders the agent's Python needs: the venv, the base interpreter, and a2rl's own source
    when it is an editable install (its .pth points outside site-packages)."""
    import a2rl

    roots = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
             Path(sys.executable).resolve().parent.parent,
             Path(a2rl.__file__).resolve().parent.parent}
    return sorted(roots)


@dataclass
class BwrapSandbox:
    kind: SandboxKind = "bwrap"
    sandboxed: bool = True
    executable: str = "bwrap"

    def wrap(self, argv: list[str], *, workspace: Path, read_only: Sequence[Path] = (),
             bridge: HostBridge | None = None) -> list[str]:
        ws = str(workspace.resolve())
        args = [self.executable, "--die-with-parent", "--new-session",
                "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
                "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--hostname", "a2rl-sandbox"]
        args += system_mount_args(_SYSTEM_DIRS)
        args += [arg for f in _MASKED_FILES if Path(f).exists()
                 for arg in ("--ro-bind", "/dev/null", f)]
        args += [arg for d in _MASKED_DIRS if Path(d).is_dir() for arg in ("--tmpfs", d)]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/tmp/home"]
        for dev in sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri/*")):
            args += ["--dev-bind", dev, dev]
        for root in _python_roots():
            if not any(str(root).startswith(d + "/") for d in ("/usr", "/opt")):
                args += ["--ro-bind", str(root), str(root)]
        if bridge is not None:
            args += ["--unshare-net", "--bind", str(bridge.socket_dir), SOCKET_DIR_IN_SANDBOX]
            argv = bridge.inside_command(argv)
        args += ["--bind", ws, ws]
        for entry in READ_ONLY_ENTRIES:
            if (workspace / entry).exists():
                args += ["--ro-bind", f"{ws}/{entry}", f"{ws}/{entry}"]
        for path in read_only:  # after the workspace: they may lie inside it (mode multi)
            args += ["--ro-bind", str(path.resolve()), str(path.resolve())]
        # bwrap's root is a tmpfs holding the mount points (including the empty parents of the
        # workspace); make it read-only so nothing outside the workspace and /tmp is writable.
        args += ["--remount-ro", "/", "--chdir", ws, "--"]
        return args + list(argv)


def get_sandbox(kind: SandboxKind) -> Sandbox:
    if kind == "none":
        return NoSandbox()
    if kind == "bwrap":
        exe = shutil.which("bwrap")
        if exe is None:
            raise A2RLError(
                "bubblewrap (bwrap) is not installed, so the agent cannot be sandboxed",
                "install it (Debian/Ubuntu: `apt-get install bubblewrap`), or pass --no-sandbox "
                "to run unsandboxed (recorded in run.json and shown in every report)")
        return BwrapSandbox(executable=exe)
    raise A2RLError(f"unknown sandbox {kind!r}", "use bwrap or none")
