"""`--sandbox none` (`--no-sandbox`): no isolation, on purpose and recorded (run.json's
`sandboxed` is false and every report flags the run)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl.sandbox._bridge import HostBridge
from a2rl.sandbox._masks import Masks
from a2rl.sandbox._sandbox import sandboxes


@sandboxes.register("none")
@dataclass
class NoSandbox:
    """Runs the agent as a plain child process. Recorded as unsandboxed in run.json."""

    kind: str = "none"
    sandboxed: bool = False

    @classmethod
    def create(cls) -> NoSandbox:
        return cls()

    @property
    def traceable(self) -> bool:
        return True

    def probe(self) -> None:
        return None

    def wrap(self, argv: list[str], *, workspace: Path, read_only: Sequence[Path] = (),
             bridge: HostBridge | None = None, masks: Masks | None = None,
             env: Mapping[str, str] | None = None) -> list[str]:
        if bridge is not None:
            raise A2RLError("a private network (--network allowlist or none) needs a sandbox",
                            "use --sandbox bwrap or podman, or --network full with "
                            "--no-sandbox")
        return list(argv)

    def child_setup(self) -> Callable[[], None] | None:
        return None

    def cleanup(self) -> None:
        return None
