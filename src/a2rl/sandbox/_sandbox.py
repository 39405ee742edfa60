"""OS-level isolation of the agent: a registry of backends (`--sandbox bwrap|podman|none`)
that all meet one contract, checked by the adversarial suite (tests/test_sandbox_contract.py):

- the workspace read-write (model/, data/ and the docs read-only), the system and Python
  toolchain read-only, a private /tmp and HOME, nothing else of the host writable;
- not visible: the run directory (ledger, artifacts, evaluation outputs), $A2RL_HOME, other
  runs, the invoking user's home, /etc secrets, dataset caches, and held-out data shipped in
  the mounted Python environment (`a2rl.sandbox._masks`);
- its own PID namespace; an unprivileged uid (file permissions apply); stdio as the only
  inherited descriptors; finite process, memory and file-size limits (`a2rl.sandbox._limits`,
  applied by `child_setup()` in the child before exec, or by podman's own options);
- network `allowlist` (default) or `none`: its own network namespace where only relayed
  loopback ports answer (the grader, a local driver, and under allowlist the egress proxy that
  records every connection); `full` shares the host's (flagged in run.json and reports).

`none` (`--no-sandbox`) is an explicit, recorded lack of isolation.
"""

from __future__ import annotations

import glob
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from a2rl._errors import A2RLError
from a2rl.sandbox._bridge import SOCKET_DIR_IN_SANDBOX, HostBridge
from a2rl.sandbox._limits import Limits, PidsCgroup, apply_rlimits
from a2rl.sandbox._masks import Masks, sandbox_masks
from a2rl.workspace import READ_ONLY_ENTRIES

SandboxKind = Literal["bwrap", "podman", "none"]
NetworkPolicy = Literal["allowlist", "full", "none"]
SANDBOX_KINDS: tuple[SandboxKind, ...] = ("bwrap", "podman", "none")
SANDBOX_UID = 1000
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt")
_SYSTEM_DIRS = SYSTEM_DIRS
# The user namespace maps the invoking uid to the agent's uid, so when a2rl runs as root every
# root-owned file that is mounted looks like the agent's own. Secrets under /etc are masked.
MASKED_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")
MASKED_DIRS = ("/etc/ssh", "/etc/ssl/private", "/etc/sudoers.d", "/etc/xdg/pip")


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

    @property
    def traceable(self) -> bool:
        """True when a tracer started around `wrap(...)`'s command line, outside the sandbox,
        follows the agent's processes (strace -f)."""
        ...

    def probe(self) -> None:
        """Start `true` in the backend; raise A2RLError (what failed, and the fix) if it
        cannot run here."""
        ...

    def wrap(self, argv: list[str], *, workspace: Path, read_only: Sequence[Path] = (),
             bridge: HostBridge | None = None, masks: Masks | None = None,
             env: Mapping[str, str] | None = None) -> list[str]:
        """The command line that runs `argv` inside the sandbox with cwd = workspace;
        `read_only` host folders become visible read-only; `bridge` (network allowlist/none)
        relays its loopback ports into a private network namespace; `masks` are hidden
        (default: `sandbox_masks()`); `env` is the agent's environment (a backend that does not
        pass its own environment on forwards these names)."""
        ...

    def child_setup(self) -> Callable[[], None] | None:
        """What the harness runs in the sandbox's first process before exec (resource limits
        for backends that inherit them), or None."""
        ...

    def cleanup(self) -> None:
        """Remove whatever the backend left running or on disk (idempotent)."""
        ...


@dataclass
class NoSandbox:
    """Runs the agent as a plain child process. Recorded as unsandboxed in run.json."""

    kind: SandboxKind = "none"
    sandboxed: bool = False

    @property
    def traceable(self) -> bool:
        return True

    def probe(self) -> None:
        return None

    def wrap(self, argv: list[str], *, workspace: Path, read_only: Sequence[Path] = (),
             bridge: HostBridge | None = None, masks: Masks | None = None,
             env: Mapping[str, str] | None = None) -> list[str]:
        if bridge is not None:
            raise A2RLError("a private network (--network allowlist or none) needs a sandbox",
                            "use --sandbox bwrap or podman, or --network full with "
                            "--no-sandbox")
        return list(argv)

    def child_setup(self) -> Callable[[], None] | None:
        return None

    def cleanup(self) -> None:
        return None


def python_roots() -> list[Path]:
    """Folders the agent's Python needs: the venv, the base interpreter, and a2rl's own source
    when it is an editable install (its .pth points outside site-packages)."""
    import a2rl

    roots = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
             Path(sys.executable).resolve().parent.parent,
             Path(a2rl.__file__).resolve().parent.parent}
    return sorted(roots)


_python_roots = python_roots


def mounted_roots(read_only: Sequence[Path]) -> list[Path]:
    """Every host folder a backend makes visible (what masks are checked against)."""
    return ([Path(d).resolve() for d in SYSTEM_DIRS if Path(d).is_dir()] + python_roots()
            + [Path(p).resolve() for p in read_only])


def gpu_devices() -> list[str]:
    return sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri/*"))


def _probe_failure(kind: str, argv: list[str], timeout: float = 60) -> str | None:
    """None when `argv` (the backend running `true`) exits 0; else what it said."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, text=True, errors="replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode == 0:
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return f"exit {done.returncode}: " + (lines[-1] if lines else "(no output)")


@dataclass
class BwrapSandbox:
    kind: SandboxKind = "bwrap"
    sandboxed: bool = True
    executable: str = "bwrap"
    limits: Limits = field(default_factory=Limits)
    _cgroup: PidsCgroup | None = None

    @property
    def traceable(self) -> bool:
        return True

    def probe(self) -> None:
        import tempfile

        probe_dir = Path(tempfile.mkdtemp(prefix="a2rl-probe-"))
        try:
            why = _probe_failure("bwrap", self.wrap(["true"], workspace=probe_dir, masks=Masks()))
        finally:
            shutil.rmtree(probe_dir, ignore_errors=True)
        if why is not None:
            raise A2RLError(
                f"the bwrap sandbox cannot start here ({why})",
                "bubblewrap needs unprivileged user namespaces: enable them "
                "(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces>0, "
                "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04+), or use "
                "--sandbox podman, or --no-sandbox (recorded as unsandboxed)")

    def wrap(self, argv: list[str], *, workspace: Path, read_only: Sequence[Path] = (),
             bridge: HostBridge | None = None, masks: Masks | None = None,
             env: Mapping[str, str] | None = None) -> list[str]:
        ws_path = workspace.resolve()
        ws = str(ws_path)
        args = [self.executable, "--die-with-parent", "--new-session",
                "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
                "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--unshare-cgroup-try", "--hostname", "a2rl-sandbox"]
        args += system_mount_args(SYSTEM_DIRS)
        args += [arg for f in MASKED_FILES if Path(f).exists()
                 for arg in ("--ro-bind", "/dev/null", f)]
        args += [arg for d in MASKED_DIRS if Path(d).is_dir() for arg in ("--tmpfs", d)]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/tmp/home"]
        for dev in gpu_devices():
            args += ["--dev-bind", dev, dev]
        for root in python_roots():
            if not any(str(root).startswith(d + "/") for d in ("/usr", "/opt")):
                args += ["--ro-bind", str(root), str(root)]
        for path in read_only:
            if not _inside(path.resolve(), ws_path):
                args += ["--ro-bind", str(path.resolve()), str(path.resolve())]
        hidden = (sandbox_masks() if masks is None else masks).under(
            mounted_roots(read_only), exclude=[ws_path])
        args += [a for d in hidden.dirs for a in ("--tmpfs", str(d))]
        args += [a for f in hidden.files for a in ("--ro-bind", "/dev/null", str(f))]
        args += [a for f in hidden.reveal for a in ("--ro-bind", str(f), str(f))]
        if bridge is not None:
            args += ["--unshare-net", "--ro-bind", str(bridge.socket_dir), SOCKET_DIR_IN_SANDBOX]
            argv = bridge.inside_command(argv)
        args += ["--bind", ws, ws]
        for entry in READ_ONLY_ENTRIES:
            if (workspace / entry).exists():
                args += ["--ro-bind", f"{ws}/{entry}", f"{ws}/{entry}"]
        for path in read_only:  # after the workspace: they may lie inside it (mode multi)
            if _inside(path.resolve(), ws_path):
                args += ["--ro-bind", str(path.resolve()), str(path.resolve())]
        # bwrap's root is a tmpfs holding the mount points (including the empty parents of the
        # workspace); make it read-only so nothing outside the workspace and /tmp is writable.
        args += ["--remount-ro", "/", "--chdir", ws, "--"]
        return args + list(argv)

    def child_setup(self) -> Callable[[], None] | None:
        """Lower the rlimits (inherited by bwrap and everything inside) and join a fresh
        pids cgroup where one can be made (the only process cap for a root-run harness)."""
        if self._cgroup is None:
            self._cgroup = PidsCgroup.create(self.limits.procs)
        cgroup, pairs = self._cgroup, self.limits.rlimits(bool(gpu_devices()))

        def setup() -> None:
            if cgroup is not None:
                cgroup.enter()
            apply_rlimits(pairs)

        return setup

    def cleanup(self) -> None:
        if self._cgroup is not None:
            self._cgroup.remove()


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


_BACKENDS = ("bwrap", "podman", "none")


def get_sandbox(kind: str) -> Sandbox:
    """The backend `kind`; its executable must exist (whether it can start is `probe()`)."""
    if kind == "none":
        return NoSandbox()
    if kind == "bwrap":
        exe = shutil.which("bwrap")
        if exe is None:
            raise A2RLError(
                "bubblewrap (bwrap) is not installed, so the agent cannot be sandboxed",
                "install it (Debian/Ubuntu: `apt-get install bubblewrap`), or use "
                "--sandbox podman, or --no-sandbox to run unsandboxed (recorded in run.json "
                "and shown in every report)")
        return BwrapSandbox(executable=exe)
    if kind == "podman":
        from a2rl.sandbox._podman import PodmanSandbox, find_podman

        return PodmanSandbox(executable=find_podman())
    raise A2RLError(f"unknown sandbox {kind!r}", f"use one of: {', '.join(_BACKENDS)}")


def start_sandbox(kind: str) -> Sandbox:
    """`get_sandbox(kind)` checked by starting `true` in it: a backend that cannot run here
    fails before any heavy step, naming what failed and the fix, and the other backends'
    state (so the user knows which one would work)."""
    sandbox = get_sandbox(kind)
    try:
        sandbox.probe()
    except A2RLError as exc:
        others: list[str] = []
        for other in SANDBOX_KINDS:
            if other in (kind, "none"):
                continue
            try:
                get_sandbox(other).probe()
                others.append(f"--sandbox {other} works here")
            except A2RLError as why:
                others.append(f"--sandbox {other}: {why.message}")
        raise A2RLError(exc.message + ("; " + "; ".join(others) if others else ""),
                        exc.fix) from None
    return sandbox
