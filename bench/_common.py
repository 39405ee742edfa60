"""Shared by the bench scripts: one machine-readable result line per measured figure.

Every script prints, next to its human-readable report, lines of the form

    RESULT {"name": ..., "value": ..., "unit": ..., "target": ..., "ok": ...}

which `bench/run_all.py` collects into one table (and `make bench` prints).
"""

from __future__ import annotations

import json
import os
import resource
import time


def load() -> str:
    """The 1-minute load average and the core count: a figure means little without them."""
    return f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of its waited-for descendants so far.
    On a shared machine the wall time depends on the other load; the CPU time much less."""
    own = time.process_time()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own + kids.ru_utime + kids.ru_stime


def result(name: str, value: float, unit: str, *, target: str | None = None,
           ok: bool | None = None, note: str = "") -> None:
    """Print one RESULT line (`target` in words, e.g. "<= 1.05"; `ok` whether it is met)."""
    print("RESULT " + json.dumps({"name": name, "value": round(value, 4), "unit": unit,
                                  "target": target, "ok": ok, "note": note, "load": load()}),
          flush=True)
