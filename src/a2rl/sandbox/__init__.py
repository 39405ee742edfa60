"""Isolation of the agent process (bubblewrap), or an explicit, recorded lack of it."""

from a2rl.sandbox._bridge import HostBridge
from a2rl.sandbox._sandbox import (
    SANDBOX_UID,
    BwrapSandbox,
    NetworkPolicy,
    NoSandbox,
    Sandbox,
    SandboxKind,
    get_sandbox,
    system_mount_args,
)

__all__ = ["SANDBOX_UID", "BwrapSandbox", "HostBridge", "NetworkPolicy", "NoSandbox", "Sandbox",
           "SandboxKind", "get_sandbox", "system_mount_args"]
