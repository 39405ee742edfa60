"""The podman backend's names where code imports them from (`a2rl.sandbox._podman`); the
backend itself is `a2rl.sandbox.backends.podman`."""

from a2rl.sandbox.backends.podman import (
    OPTIONS_ENV,
    PODMAN_OPTION_SETS,
    PodmanSandbox,
    find_podman,
)

__all__ = ["OPTIONS_ENV", "PODMAN_OPTION_SETS", "PodmanSandbox", "find_podman"]
