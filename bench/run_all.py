"""Run every benchmark in one go and print their figures as one table (`make bench`).

    python bench/run_all.py [--quick] [--only NAME,...]

Each script runs in its own process (a fresh interpreter, so one's model and threads do not
slow the next) and prints RESULT lines (bench/_common.py); this collects them. A script that is
not there is skipped with a note: bench/vllm_ratio.py (vLLM vs transformers on the same
evaluation) joins the table as soon as it exists (it is given `--quick` under --quick, and
reports through bench/_common.result like the others). `--quick` passes each script its small
settings (minutes, not the full L3 baselines).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (script, arguments for a full run, arguments for --quick)
SCRIPTS: list[tuple[str, list[str], list[str]]] = [
    ("cli_startup.py", [], ["--runs", "3"]),
    ("grading_overhead.py", [], ["--items", "32"]),
    ("rollout_lockstep.py", [], ["--episodes", "8"]),
    ("humaneval_sandbox.py", [], ["--runs", "1"]),
    # The hook for the vLLM engine's ratio (its own script, owned with the vLLM engine).
    ("vllm_ratio.py", [], ["--quick"]),
    ("forward_floor.py", [], ["--decode-steps", "5"]),
    ("shared_cores.py", [], ["--steps", "2"]),
    ("l3_baselines.py", ["--full"], ["--episodes", "4", "--tasks", "deepsearchqa"]),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated script names (without .py)")
    args = ap.parse_args()
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    rows: list[dict[str, object]] = []
    failed: list[str] = []
    for script, full, quick in SCRIPTS:
        if only and script.removesuffix(".py") not in only:
            continue
        path = HERE / script
        if not path.exists():
            print(f"--- {script}: not present, skipped", flush=True)
            continue
        print(f"--- {script}", flush=True)
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, str(path), *(quick if args.quick else full)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("RESULT "):
                rows.append({"script": script, **json.loads(line[len("RESULT "):])})
            else:
                print(line, end="", flush=True)
        if proc.wait() != 0:
            failed.append(script)
        print(f"    ({time.monotonic() - start:.0f} s)", flush=True)
    print("\n=== bench summary")
    for r in rows:
        verdict = "" if r["ok"] is None else ("OK" if r["ok"] else "MISSED")
        target = f"target {r['target']}" if r["target"] else ""
        print(f"{r['name']:<44} {r['value']:>10} {r['unit']:<10} {target:<16} {verdict:<7} "
              f"({r['load']}) {r['note']}")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
