"""The podman backend (`--sandbox podman`): for clusters where unprivileged user namespaces (what
bwrap needs) are off but podman is provided.

The container's root is an empty skeleton folder (read-only) holding the host's /usr, /etc,
/opt and the Python environment as read-only volumes, the workspace read-write, a private
/tmp and HOME: the same view as the bwrap backend (`a2rl.sandbox._sandbox` states the
contract). The agent runs as uid 1000 mapped to the invoking user (root-run: an explicit
uid map; rootless: keep-id), with no capabilities and no-new-privileges, under catatonit as
PID 1 (signals reach the agent). Secrets travel as `-e NAME` (value from podman's own
environment), never on the command line.

What this machine needed (and a cluster may too), found by probing (`PODMAN_OPTION_SETS`):
- `--ulimit nofile=… --ulimit nproc=…` set to the current limits (nproc at most conmon's
  32768 and the run's process limit): podman's defaults (1048576) exceed the hard limits of a
  container without CAP_SYS_RESOURCE and crun/runc fail at setrlimit;
- on a cgroup v1/hybrid host: `--runtime runc --cgroup-manager cgroupfs` (crun refuses hybrid
  cgroups) and a tmpfs over /sys/fs/cgroup (runc cannot bind a nested v1 hierarchy);
- `--storage-driver vfs` where overlayfs is unavailable.
Set A2RL_PODMAN_OPTIONS (shell words, global podman options) to force a set.
"""

from __future__ import annotations

import contextlib
import os
import resource
import secrets
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl.sandbox._bridge import SOCKET_DIR_IN_SANDBOX, HostBridge
from a2rl.sandbox._host import SYSTEM_DIRS, gpu_devices, mounted_roots, python_mounts, python_roots, within
from a2rl.sandbox._limits import Limits
from a2rl.sandbox._masks import Masks, masked_system_paths, sandbox_masks
from a2rl.sandbox._sandbox import READ_ONLY_ENTRIES, SANDBOX_UID, bind_source, probe_failure, sandboxes

OPTIONS_ENV = "A2RL_PODMAN_OPTIONS"
# conmon (podman's monitor, the OCI runtime's parent) runs with RLIMIT_NPROC 32768: a larger
# value would be a raise, which an unprivileged container runtime is refused.
_NPROC_CAP = 32768
PODMAN_OPTION_SETS: tuple[tuple[str, ...], ...] = (
    (),
    ("--runtime", "runc", "--cgroup-manager", "cgroupfs"),
    ("--runtime", "runc", "--cgroup-manager", "cgroupfs", "--storage-driver", "vfs"),
)
_FIX = ("podman needs, on the cluster: rootless podman with newuidmap/newgidmap and an entry "
        "for your user in /etc/subuid and /etc/subgid (or root), a runtime that supports the "
        "host's cgroup layout (runc on cgroup v1/hybrid, crun or runc on v2), and no "
        "network helper for --network allowlist/none (a2rl uses podman's `none` network plus "
        "its own socket relay). Force global podman options with "
        f"{OPTIONS_ENV}='--runtime runc --cgroup-manager cgroupfs', or use --sandbox bwrap "
        "(needs unprivileged user namespaces), or --no-sandbox (recorded as unsandboxed)")


def find_podman() -> str:
    exe = shutil.which("podman")
    if exe is None:
        raise A2RLError("podman is not installed, so the podman sandbox is unavailable",
                        "install it (Debian/Ubuntu: `apt-get install podman runc catatonit`), "
                        "or use --sandbox bwrap, or --no-sandbox (recorded as unsandboxed)")
    return exe


def _limit(which: int, cap: int | None = None) -> str:
    """The current limits (never above `cap`): the OCI runtime may only lower them."""
    soft, hard = resource.getrlimit(which)
    if cap is not None:
        soft = cap if soft == resource.RLIM_INFINITY else min(soft, cap)
        hard = cap if hard == resource.RLIM_INFINITY else min(hard, cap)

    def fmt(v: int) -> str:
        return "-1" if v == resource.RLIM_INFINITY else str(v)

    return f"{fmt(soft)}:{fmt(hard)}"


@sandboxes.register("podman")
@dataclass
class PodmanSandbox:
    """A rootless (or root-run) podman container over a read-only skeleton of the host."""

    kind: str = "podman"
    sandboxed: bool = True
    executable: str = "podman"
    global_options: tuple[str, ...] | None = None
    """Chosen by `probe()` (or A2RL_PODMAN_OPTIONS); None = not probed yet."""
    name: str = field(default_factory=lambda: f"a2rl-{secrets.token_hex(6)}")
    """Container name (for `podman rm -f` at cleanup)."""
    _roots: list[Path] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)

    @classmethod
    def create(cls) -> PodmanSandbox:
        return cls(executable=find_podman())

    @property
    def traceable(self) -> bool:
        # The container's processes are children of conmon, not of the podman client: a tracer
        # around the client does not see them.
        return False

    def _options(self) -> tuple[str, ...]:
        if self.global_options is not None:
            return self.global_options
        if env := os.environ.get(OPTIONS_ENV):
            return tuple(shlex.split(env))
        return PODMAN_OPTION_SETS[0]

    def probe(self) -> None:
        forced = os.environ.get(OPTIONS_ENV)
        candidates = [tuple(shlex.split(forced))] if forced else list(PODMAN_OPTION_SETS)
        failures: list[str] = []
        for options in candidates:
            self.global_options = options
            probe = PodmanSandbox(executable=self.executable, global_options=options)
            ws = Path(tempfile.mkdtemp(prefix="a2rl-probe-"))
            try:
                argv = probe.wrap(["true"], workspace=ws, masks=Masks())
                why = probe_failure(argv, timeout=120)
            finally:
                probe.cleanup()
                shutil.rmtree(ws, ignore_errors=True)
            if why is None:
                return
            failures.append(f"[{' '.join(options) or 'defaults'}] {why}")
        self.global_options = None
        raise A2RLError("the podman sandbox cannot start here: " + "; ".join(failures), _FIX)

    def _rootfs(self) -> Path:
        root = Path(tempfile.mkdtemp(prefix="a2rl-podroot-"))
        root.chmod(0o755)
        self._roots.append(root)
        for d in SYSTEM_DIRS:
            p = Path(d)
            if p.is_symlink():
                (root / d.lstrip("/")).symlink_to(p.readlink())
        return root

    def wrap(self, argv: list[str], *, workspace: Path, read_only: Sequence[Path] = (),
             bridge: HostBridge | None = None, masks: Masks | None = None,
             env: Mapping[str, str] | None = None) -> list[str]:
        ws = workspace.resolve()
        env = dict(env or {})
        # podman itself runs with the agent's environment: give it back the invoking user's
        # HOME/XDG dirs (its storage and config live there when rootless).
        client_env = [f"{k}={os.environ[k]}" for k in ("HOME", "XDG_RUNTIME_DIR",
                                                        "XDG_CONFIG_HOME", "XDG_DATA_HOME")
                      if k in os.environ]
        args = ["env", *client_env, self.executable, *self._options(), "run", "--rm",
                "--name", self.name, "--init", "--read-only", "--pull", "never",
                "--hostname", "a2rl-sandbox", "--ipc", "private",
                "--cap-drop", "all", "--security-opt", "no-new-privileges",
                "--ulimit", f"nofile={_limit(resource.RLIMIT_NOFILE)}",
                "--ulimit", f"nproc={_limit(resource.RLIMIT_NPROC, min(_NPROC_CAP, self.limits.procs))}",
                *self.limits.podman_args(),
                "--tmpfs", "/sys/fs/cgroup:notmpcopyup", "--tmpfs", "/tmp:mode=1777,notmpcopyup",
                "--tmpfs", "/tmp/home:mode=1777,notmpcopyup",
                "--user", f"{SANDBOX_UID}:{SANDBOX_UID}", "--workdir", str(ws)]
        if os.getuid() == 0:
            args += ["--uidmap", f"{SANDBOX_UID}:0:1", "--uidmap", f"0:100000:{SANDBOX_UID}",
                     "--gidmap", f"{SANDBOX_UID}:0:1", "--gidmap", f"0:100000:{SANDBOX_UID}"]
        else:
            args += ["--userns", f"keep-id:uid={SANDBOX_UID},gid={SANDBOX_UID}"]
        for d in SYSTEM_DIRS:
            p = Path(d)
            if p.is_dir() and not p.is_symlink():
                args += ["-v", f"{d}:{d}:ro"]
        args += self._mask_args(masked_system_paths())
        for root in python_mounts(python_roots()):
            args += ["-v", f"{root}:{root}:ro"]
        for dev in gpu_devices():
            args += ["--device", dev]
        hidden = (sandbox_masks() if masks is None else masks).under(
            mounted_roots(read_only), exclude=[ws])
        args += self._mask_args(hidden)
        if bridge is not None:
            args += ["--network", "none", "-v", f"{bridge.socket_dir}:{SOCKET_DIR_IN_SANDBOX}:ro"]
            argv = bridge.inside_command(argv, forward_term=True)
        else:
            args += ["--network", "host"]
        args += ["-v", f"{ws}:{ws}"]
        for entry in READ_ONLY_ENTRIES:
            if (ws / entry).exists():
                args += ["-v", f"{bind_source(ws / entry)}:{ws}/{entry}:ro"]
        for path in read_only:
            shown = path.resolve()
            source = bind_source(shown) if within(shown, ws) else shown
            args += ["-v", f"{source}:{shown}:ro"]
        env.setdefault("HOME", "/tmp/home")
        for key in sorted(env):
            # Values stay off the command line (they may be keys); HOME is the sandbox's own.
            args += ["-e", f"HOME={env[key]}" if key == "HOME" else key]
        args += ["--rootfs", str(self._rootfs()), *argv]
        return args

    @staticmethod
    def _mask_args(masks: Masks) -> list[str]:
        """An empty tmpfs over each masked folder, /dev/null over each masked file, and the
        files revealed inside masked folders mounted back read-only."""
        args = [a for d in masks.dirs
                for a in ("--mount", f"type=tmpfs,destination={d},notmpcopyup")]
        args += [a for f in masks.files for a in ("-v", f"/dev/null:{f}:ro")]
        return args + [a for f in masks.reveal for a in ("-v", f"{f}:{f}:ro")]

    def child_setup(self) -> Callable[[], None] | None:
        return None  # the container's limits are podman's options, set by the OCI runtime

    def leftovers(self) -> dict[str, str]:
        return {"container": self.name}

    @classmethod
    def remove_leftovers(cls, state: dict[str, object]) -> None:
        """Remove the container a dead harness left (conmon's child, so it outlives it)."""
        name = state.get("container")
        # only a name a2rl gives (a2rl-<hex>): never pass other text to podman
        if not (isinstance(name, str) and name.startswith("a2rl-") and name[5:].isalnum()):
            return
        executable = shutil.which("podman")
        if executable is None:
            return
        box = cls(executable=executable, name=name)
        with contextlib.suppress(A2RLError):
            box.probe()  # the global options that start containers here (those the run used)
        box.cleanup()

    def cleanup(self) -> None:
        try:
            subprocess.run([self.executable, *self._options(), "rm", "-f", "-t", "0", self.name],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for root in self._roots:
            shutil.rmtree(root, ignore_errors=True)
        self._roots.clear()
