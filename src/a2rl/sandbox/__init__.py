"""Isolation of the agent process: a registry of sandbox backends (`sandboxes`: bwrap, podman,
plug-ins) with one contract, or an explicit, recorded lack of it (none); the loopback bridge and
egress proxy of the private-network policies; the masks over held-out data in the mounted
environment."""

from a2rl.sandbox._bridge import HostBridge
from a2rl.sandbox._masks import Masks, sandbox_masks, task_mask_hooks
from a2rl.sandbox._proxy import AllowEntry, EgressProxy, default_allow_list
from a2rl.sandbox._sandbox import (
    SANDBOX_KINDS,
    SANDBOX_UID,
    NetworkPolicy,
    Sandbox,
    SandboxKind,
    backend_class,
    get_sandbox,
    sandboxes,
    start_sandbox,
    system_mount_args,
)
from a2rl.sandbox.backends.bwrap import BwrapSandbox
from a2rl.sandbox.backends.none import NoSandbox

__all__ = ["SANDBOX_KINDS", "SANDBOX_UID", "AllowEntry", "BwrapSandbox", "EgressProxy",
           "HostBridge", "Masks", "NetworkPolicy", "NoSandbox", "Sandbox", "SandboxKind",
           "backend_class", "default_allow_list", "get_sandbox", "sandbox_masks", "sandboxes",
           "start_sandbox", "system_mount_args", "task_mask_hooks"]
