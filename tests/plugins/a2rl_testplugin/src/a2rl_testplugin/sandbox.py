"""`--sandbox testjail`: the bwrap backend with a marker, so a run shows it went through this
backend: every command it wraps runs under `env A2RL_TESTJAIL=1`, set inside the sandbox (the
harness's own environment never has it). Everything else, and so the sandbox contract, is
bwrap's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from a2rl.sandbox import BwrapSandbox, HostBridge, Masks

MARKER = "A2RL_TESTJAIL"


@dataclass
class MarkedJail(BwrapSandbox):
    kind: str = "testjail"

    def wrap(self, argv: list[str], *, workspace: Path, read_only: Sequence[Path] = (),
             bridge: HostBridge | None = None, masks: Masks | None = None,
             env: Mapping[str, str] | None = None) -> list[str]:
        return super().wrap(["env", f"{MARKER}=1", *argv], workspace=workspace,
                            read_only=read_only, bridge=bridge, masks=masks, env=env)
