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
from a2rl.sandbox._bwrap import BwrapView, Mount, bwrap_command, find_bwrap, refuses_nested_userns
from a2rl.sandbox._host import gpu_devices, mounted_roots, python_roots, within
from a2rl.sandbox._limits import Limits, PidsCgroup, apply_rlimits
from a2rl.sandbox._masks import Masks, sandbox_masks
from a2rl.sandbox._sandbox import READ_ONLY_ENTRIES, bind_source, probe_failure, sandboxes


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
        exe = find_bwrap()
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
        if not refuses_nested_userns(self.executable):
            raise A2RLError(
                f"the bwrap sandbox needs bubblewrap 0.8 or later ({self.executable} cannot "
                "refuse nested user namespaces: no --disable-userns)",
                "install bubblewrap >= 0.8, or use --sandbox podman, or --no-sandbox "
                "(recorded as unsandboxed)")

    def wrap(self, argv: list[str], *, workspace: Path, read_only: Sequence[Path] = (),
             bridge: HostBridge | None = None, masks: Masks | None = None,
             env: Mapping[str, str] | None = None) -> list[str]:
        ws = workspace.resolve()
        resolved = [path.resolve() for path in read_only]
        mounts = [Mount(path, path) for path in resolved if not within(path, ws)]
        if bridge is not None:
            mounts.append(Mount(bridge.socket_dir, Path(SOCKET_DIR_IN_SANDBOX)))
            argv = bridge.inside_command(argv)
        mounts.append(Mount(ws, ws, writable=True))
        mounts += [Mount(bind_source(ws / entry), ws / entry) for entry in READ_ONLY_ENTRIES
                   if (ws / entry).exists()]
        # after the workspace: they may lie inside it (mode multi)
        mounts += [Mount(bind_source(path), path) for path in resolved if within(path, ws)]
        hidden = (sandbox_masks() if masks is None else masks).under(
            mounted_roots(read_only), exclude=[ws])
        view = BwrapView(workdir=ws, python=python_roots(), mounts=mounts, hidden=hidden,
                         private_network=bridge is not None, devices=gpu_devices())
        return bwrap_command(self.executable, view, argv)

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
