#!/usr/bin/env bash
# Prints the remaining budget, read from the grader's clock (the single clock of this run).
set -euo pipefail
# Mode multi: each task folder's grader.env points at that task's grader.
here="$(cd "$(dirname "$0")" && pwd)"
if [ -z "${A2RL_GRADER_URL:-}" ] && [ -f "$here/grader.env" ]; then
  # shellcheck disable=SC1091
  . "$here/grader.env"
fi
: "${A2RL_GRADER_URL:?A2RL_GRADER_URL is not set}"
: "${A2RL_TOKEN:?A2RL_TOKEN is not set}"
exec python3 - <<'PY'
import json, os, sys, urllib.request
req = urllib.request.Request(os.environ["A2RL_GRADER_URL"] + "/status",
                             headers={"Authorization": "Bearer " + os.environ["A2RL_TOKEN"]})
try:
    with urllib.request.urlopen(req, timeout=10) as resp:
        s = json.load(resp)
except Exception as exc:
    sys.exit(f"timer.sh: cannot reach the grader: {exc}")
r = int(s["remaining_seconds"])
print(f"Remaining: {r // 3600}h {r % 3600 // 60:02d}m {r % 60:02d}s "
      f"({r} s of {int(s['budget_seconds'])} s)")
PY
