"""Isolation of the agent process: a registry of sandbox backends (`sandboxes`: bwrap, podman,
plug-ins) with one contract, or an explicit, recorded lack of it (none); the loopback bridge and
egress proxy of the private-network policies; the masks over held-out data in the mounted
environment."""

from a2rl.sandbox._bridge import BRIDGE_CODE, Handler, HostBridge
from a2rl.sandbox._limits import Limits
from a2rl.sandbox._masks import SYSTEM_DIRS, Masks, owner_only_masks_in, python_roots, sandbox_masks
from a2rl.sandbox._proxy import AllowEntry, EgressProxy, default_allow_list
from a2rl.sandbox._sandbox import (
    BIND_RECORD,
    READ_ONLY_ENTRIES,
    SANDBOX_KINDS,
    SANDBOX_UID,
    NetworkPolicy,
    Sandbox,
    SandboxKind,
    backend_class,
    bind_source,
    get_sandbox,
    make_bind_point,
    mounted_roots,
    sandboxes,
    start_sandbox,
    system_mount_args,
)
from a2rl.sandbox.backends.bwrap import BwrapSandbox
from a2rl.sandbox.backends.none import NoSandbox

__all__ = [
    "BIND_RECORD", "BRIDGE_CODE", "READ_ONLY_ENTRIES", "SANDBOX_KINDS", "SANDBOX_UID",
    "SYSTEM_DIRS", "AllowEntry", "BwrapSandbox", "EgressProxy", "Handler", "HostBridge", "Limits",
    "Masks", "NetworkPolicy", "NoSandbox", "Sandbox", "SandboxKind", "backend_class",
    "bind_source", "default_allow_list", "get_sandbox", "make_bind_point", "mounted_roots",
    "owner_only_masks_in", "python_roots", "sandbox_masks", "sandboxes", "start_sandbox", "system_mount_args",
]
