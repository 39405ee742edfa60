"""Per-installation secrets kept under $A2RL_HOME (never inside a workspace or the package).

Procedurally generated held-out sets are drawn from a seed stored here, so an agent that reads
a2rl's source code still cannot regenerate the items it is scored on. Pass an explicit seed
(task option `heldout_seed`) to compare runs across machines.
"""

from __future__ import annotations

import os
import secrets

from a2rl._paths import cache_dir


def installation_seed(name: str) -> int:
    path = cache_dir("secrets") / name
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        pass
    value = secrets.randbelow(2**31 - 1) + 1
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"{value}\n")
    return value


REDACTED = "[REDACTED]"


def scrub(text: str, secret_values: list[str] | tuple[str, ...]) -> str:
    """`text` with every known secret value (API keys handed to an agent) replaced."""
    for value in secret_values:
        if value:
            text = text.replace(value, REDACTED)
    return text
