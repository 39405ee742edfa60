"""OS-level isolation of the agent: a registry of backends (`--sandbox bwrap|podman|none`, and
plug-ins) that all meet one contract, checked by the adversarial suite
(tests/sandbox/test_sandbox_contract.py):

- the workspace read-write (model/, data/ and the docs read-only; a bind point, such as
  model/, shows the host folder its record names: `bind_source`), the system and Python
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

The scorer's sandbox (`scoring_command`: a model-written program, no workspace) is bwrap's
command line with its own profile, and meets the part of the suite every sandbox of untrusted
code shares: no network, writes only in its own folders, masked host paths unreadable, its
size limit held.

A backend is one class meeting `Sandbox`, registered with `@sandboxes.register(name)`. The
built-in ones are the modules of `a2rl.sandbox.backends`, each named like its module (adding one
is adding a module there); a third-party package registers under the `a2rl.sandboxes` entry
point group (`name = "pkg.module:Class"`).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal, Protocol, overload

from a2rl._errors import A2RLError
from a2rl._plugins import Registry
from a2rl.sandbox._bridge import HostBridge
from a2rl.sandbox._masks import Masks

READ_ONLY_ENTRIES = ("model", "data", "description.md", "instructions.md", "timer.sh")
"""Workspace entries every backend mounts read-only (the rest of the workspace is writable); an
entry that is a bind point (`make_bind_point`) shows its recorded source instead."""
BIND_RECORD = ".a2rl-bind"
"""The file inside an empty workspace folder that names the host folder mounted over it."""

SandboxKind = str
"""A registered backend's name (`sandboxes.names()`); run.json stores it as given."""
NetworkPolicy = Literal["allowlist", "full", "none"]
SANDBOX_UID = 1000


class Sandbox(Protocol):
    """A sandbox backend (the registry holds the class; `create()` makes the instance a run
    uses)."""

    kind: str
    """The name it is registered under (recorded in run.json as `config.sandbox`)."""
    sandboxed: bool
    """False for a backend that isolates nothing (`none`): the run is flagged unsandboxed."""

    @classmethod
    def create(cls) -> Sandbox:
        """The backend with its program found on this machine; A2RLError (what is missing,
        and the fix) if it is not installed. Whether it can start is `probe()`."""
        ...

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

    # Optional, for a backend whose processes outlive a killed harness (not children of it):
    #   def leftovers(self) -> dict[str, str]: what to find them by, recorded at the agent's
    #       start in the run folder's sandbox.json;
    #   @classmethod def remove_leftovers(cls, state: dict) -> None: removes them from that
    #       record (`a2rl runs repair`). The record is read back from disk: validate it.


def make_bind_point(target: Path, source: Path) -> None:
    """Create the workspace folder `target` (must not exist) as a bind point: an empty,
    read-only folder over which every backend mounts the host folder `source` read-only. The
    record naming `source` lies inside it, so the mount hides it from the agent, and nothing is
    copied: the agent reads `source` itself and cannot write to it (a read-only mount refuses
    writes whatever the file modes say)."""
    source = source.resolve()
    if not source.is_dir():
        raise A2RLError(f"{source} is not a folder and cannot be mounted at {target}",
                        "pass a folder")
    target.mkdir()
    record = target / BIND_RECORD
    record.write_text(json.dumps({"source": str(source)}))
    record.chmod(0o444)
    target.chmod(0o555)


def bind_source(path: Path) -> Path:
    """The host folder a backend mounts at the workspace entry `path`: the source its bind
    record names (`make_bind_point`), else `path` itself."""
    record = path / BIND_RECORD
    if path.is_symlink() or record.is_symlink() or not record.is_file():
        return path
    try:
        source = json.loads(record.read_text())["source"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise A2RLError(f"the bind record {record} is unreadable ({exc})",
                        "rebuild the workspace (a new run)") from exc
    if not (isinstance(source, str) and Path(source).is_absolute() and Path(source).is_dir()):
        raise A2RLError(f"the bind record {record} names no existing folder ({source!r})",
                        "rebuild the workspace (a new run); the mounted folder was removed")
    return Path(source)


def probe_failure(argv: list[str], timeout: float = 60) -> str | None:
    """A backend's `probe()`: None when `argv` (the backend running `true`) exits 0; else what
    it said."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, text=True, errors="replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode == 0:
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return f"exit {done.returncode}: " + (lines[-1] if lines else "(no output)")




sandboxes: Registry[type[Sandbox]] = Registry("sandbox backend", "a2rl.sandboxes",
                                              package="a2rl.sandbox.backends",
                                              decorator="sandboxes")
"""The sandbox backends by name: `a2rl.sandbox.backends.*`, then `a2rl.sandboxes` entry points."""


class BackendNames(Sequence[str]):
    """The registered backends' names, read from `sandboxes` when used (so installed plug-ins
    are included and listing them imports none)."""

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return sandboxes.names()[index]

    def __len__(self) -> int:
        return len(sandboxes.names())

    def __contains__(self, name: object) -> bool:
        return name in sandboxes

    def __repr__(self) -> str:
        return repr(tuple(self))


SANDBOX_KINDS: Sequence[str] = BackendNames()


def backend_class(kind: str) -> type[Sandbox]:
    """The registered backend `kind`, checked to name itself so."""
    if kind not in sandboxes:
        raise A2RLError(f"unknown sandbox {kind!r}", f"use one of: {', '.join(sandboxes.names())}")
    cls = sandboxes.get(kind)
    if getattr(cls, "kind", None) != kind or not callable(getattr(cls, "create", None)):
        raise A2RLError(f"the sandbox backend registered as {kind!r} ({cls!r}) does not meet "
                        "the backend contract (a class with kind = its name and create())",
                        f"give it kind = {kind!r} and a create() classmethod "
                        "(a2rl.sandbox.Sandbox)")
    return cls


def get_sandbox(kind: str) -> Sandbox:
    """The backend `kind`; its executable must exist (whether it can start is `probe()`)."""
    return backend_class(kind).create()


def start_sandbox(kind: str) -> Sandbox:
    """`get_sandbox(kind)` checked by starting `true` in it: a backend that cannot run here
    fails before any heavy step, naming what failed and the fix, and the other backends'
    state (so the user knows which one would work)."""
    sandbox = get_sandbox(kind)
    try:
        sandbox.probe()
    except A2RLError as exc:
        others: list[str] = []
        for other in sandboxes.names():
            if other == kind:
                continue
            try:
                box = get_sandbox(other)
                if not box.sandboxed:
                    continue
                box.probe()
                others.append(f"--sandbox {other} works here")
            except A2RLError as why:
                others.append(f"--sandbox {other}: {why.message}")
        raise A2RLError(exc.message + ("; " + "; ".join(others) if others else ""),
                        exc.fix) from None
    return sandbox
