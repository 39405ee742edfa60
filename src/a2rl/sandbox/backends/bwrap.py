"""The bwrap backend (`--sandbox bwrap`, the default): bubblewrap, which needs unprivileged user
namespaces. The contract it meets is stated in `a2rl.sandbox._sandbox`."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl.sandbox._bridge import SOCKET_DIR_IN_SANDBOX, HostBridge
from a2rl.sandbox._limits import Limits, PidsCgroup, apply_rlimits
from a2rl.sandbox._masks import SYSTEM_DIRS, Masks, python_roots, sandbox_masks
from a2rl.sandbox._sandbox import (
    READ_ONLY_ENTRIES,
    SANDBOX_UID,
    bind_source,
    gpu_devices,
    inside,
    masked_system_paths,
    mounted_roots,
    probe_failure,
    sandboxes,
    system_mount_args,
)


@sandboxes.register("bwrap")
@dataclass
class BwrapSandbox:
    """bubblewrap: unprivileged user, PID, IPC, UTS (and under a private network policy, net)
    namespaces over a read-only view of the host built from bind mounts."""

    kind: str = "bwrap"
    sandboxed: bool = True
    executable: str = "bwrap"
    limits: Limits = field(default_factory=Limits)
    _cgroup: PidsCgroup | None = None

    @classmethod
    def create(cls) -> BwrapSandbox:
        exe = shutil.which("bwrap")
        if exe is None:
            raise A2RLError(
                "bubblewrap (bwrap) is not installed, so the agent cannot be sandboxed",
                "install it (Debian/Ubuntu: `apt-get install bubblewrap`), or use "
                "--sandbox podman, or --no-sandbox to run unsandboxed (recorded in run.json "
                "and shown in every report)")
        return cls(executable=exe)

    @property
    def traceable(self) -> bool:
        return True

    def probe(self) -> None:

        probe_dir = Path(tempfile.mkdtemp(prefix="a2rl-probe-"))
        try:
            why = probe_failure(self.wrap(["true"], workspace=probe_dir, masks=Masks()))
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
        files, folders = masked_system_paths()
        args += [arg for f in files for arg in ("--ro-bind", "/dev/null", f)]
        args += [arg for d in folders for arg in ("--tmpfs", d)]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/tmp/home"]
        for dev in gpu_devices():
            args += ["--dev-bind", dev, dev]
        for root in python_roots():
            if not any(str(root).startswith(d + "/") for d in ("/usr", "/opt")):
                args += ["--ro-bind", str(root), str(root)]
        for path in read_only:
            if not inside(path.resolve(), ws_path):
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
                args += ["--ro-bind", str(bind_source(ws_path / entry)), f"{ws}/{entry}"]
        for path in read_only:  # after the workspace: they may lie inside it (mode multi)
            if inside(path.resolve(), ws_path):
                args += ["--ro-bind", str(bind_source(path.resolve())), str(path.resolve())]
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
