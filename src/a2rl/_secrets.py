"""Per-installation secrets kept under $A2RL_HOME (never inside a workspace or the package):
the seeds of procedurally generated held-out sets and the grader's HMAC key.

Procedurally generated held-out sets are drawn from a seed stored here, so an agent that reads
a2rl's source code still cannot regenerate the items it is scored on. Pass an explicit seed
(task option `heldout_seed`) to compare runs across machines.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from a2rl._paths import cache_dir
from a2rl._util import stable_hash


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


_KEY_FILE = "grader-key"
KEY_FILE_ENV = "A2RL_GRADER_KEY_FILE"
"""A file holding the key to use instead (a study's shared key, set by `a2rl.sweep`): every
machine of the study then draws the same hidden split and writes the same fingerprints. The
variable reaches the grader's own children (evaluations), never an agent (its environment is
built from an allow-list)."""


def grader_key() -> bytes:
    """This installation's 256-bit grader key (created on first use, mode 0600), or the
    study's key named by $A2RL_GRADER_KEY_FILE."""
    if override := os.environ.get(KEY_FILE_ENV):
        from a2rl._errors import A2RLError

        try:
            return bytes.fromhex(Path(override).read_text().strip())
        except (OSError, ValueError) as exc:
            raise A2RLError(f"${KEY_FILE_ENV} names an unreadable grader key ({exc})",
                            "unset it, or rejoin the study (a2rl run --study NAME)") from exc
    path = cache_dir("secrets") / _KEY_FILE
    try:
        text = path.read_text().strip()
        if len(text) == 64:
            return bytes.fromhex(text)
    except (FileNotFoundError, ValueError):
        pass
    value = secrets.token_hex(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process won the race: use its key
        return bytes.fromhex(path.read_text().strip())
    with os.fdopen(fd, "w") as fh:
        fh.write(value + "\n")
    return bytes.fromhex(value)


def keyed(purpose: str, value: object) -> str:
    """HMAC-SHA256 (hex) of a JSON-serialisable value; `purpose` separates the uses."""
    msg = purpose.encode() + b"\0" + stable_hash(value).encode()
    return hmac.new(grader_key(), msg, hashlib.sha256).hexdigest()
