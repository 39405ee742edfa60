"""Isolation of untrusted code: the agent's process, through a registry of sandbox backends
(`sandboxes`: bwrap, podman, plug-ins) with one contract, or an explicit, recorded lack of it
(none); a scorer's model-written programs, through `scoring_command` (the same bubblewrap
command line with the scorer's profile); the loopback bridge and egress proxy of the
private-network policies; the masks over held-out data in the mounted environment."""

from a2rl.sandbox._bridge import BRIDGE_CODE, Handler, HostBridge
from a2rl.sandbox._bwrap import SCORING_CWD, scoring_command
from a2rl.sandbox._host import SYSTEM_DIRS, mounted_roots, python_roots
from a2rl.sandbox._limits import Limits
from a2rl.sandbox._masks import Masks, owner_only_masks_in, sandbox_masks
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
    sandboxes,
    start_sandbox,
)
from a2rl.sandbox.backends.bwrap import BwrapSandbox
from a2rl.sandbox.backends.none import NoSandbox

__all__ = [
    "BIND_RECORD", "BRIDGE_CODE", "READ_ONLY_ENTRIES", "SANDBOX_KINDS", "SANDBOX_UID",
    "SCORING_CWD", "SYSTEM_DIRS", "AllowEntry", "BwrapSandbox", "EgressProxy", "Handler",
    "HostBridge", "Limits",
    "Masks", "NetworkPolicy", "NoSandbox", "Sandbox", "SandboxKind", "backend_class",
    "bind_source", "default_allow_list", "get_sandbox", "make_bind_point", "mounted_roots",
    "owner_only_masks_in", "python_roots", "sandbox_masks", "sandboxes", "scoring_command",
    "start_sandbox",
]
