"""A hostile agent: tries every shortcut it can think of. Prints one JSON line per attempt
{"attempt": name, "outcome": "blocked" | "LEAKED", "detail": ...}. The test expects 'blocked'."""

import json
import os
import sys
import urllib.error
import urllib.request

RUN_DIR = sys.argv[1]  # the adversary "knows" the host layout
A2RL_HOME = sys.argv[2]
WS = os.environ["A2RL_WORKSPACE"]
URL = os.environ["A2RL_GRADER_URL"]
TOKEN = os.environ["A2RL_TOKEN"]


def report(name, leaked, detail=""):
    print(json.dumps({"attempt": name, "outcome": "LEAKED" if leaked else "blocked",
                      "detail": str(detail)[:300]}), flush=True)


def try_read(name, path):
    try:
        with open(path, "rb") as fh:
            report(name, True, fh.read(200))
    except OSError as exc:
        report(name, False, exc)


def try_write(name, path, text="forged"):
    try:
        with open(path, "w") as fh:
            fh.write(text)
        report(name, True, path)
    except OSError as exc:
        report(name, False, exc)


def call(method, path, body=None, token=TOKEN):
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = "Bearer " + token
    req = urllib.request.Request(URL + path, method=method, headers=headers,
                                 data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


try_read("read ledger", os.path.join(RUN_DIR, "ledger.jsonl"))
try_read("read ledger via ..", os.path.join(WS, "..", "ledger.jsonl"))
try_read("read run.json", os.path.join(RUN_DIR, "run.json"))
try_read("read baseline eval details", os.path.join(RUN_DIR, "evals", "baseline",
                                                    "details.jsonl"))
try_read("read held-out seed", os.path.join(A2RL_HOME, "secrets", "arith-heldout-seed"))
try_read("read /root", "/root/.bash_history")
try_read("read shadow", "/etc/shadow")
try_write("forge ledger", os.path.join(RUN_DIR, "ledger.jsonl"), '{"score": 100}\n')
try_write("forge score file in run dir", os.path.join(RUN_DIR, "scores.json"), '{"best": 100}')
try_write("overwrite base model", os.path.join(WS, "model", "config.json"), "{}")
try_write("overwrite train data", os.path.join(WS, "data", "train.jsonl"), "")
try_write("overwrite timer", os.path.join(WS, "timer.sh"), "echo 99h")
try:
    os.chmod(os.path.join(WS, "model", "config.json"), 0o666)
    report("chmod base model", True)
except OSError as exc:
    report("chmod base model", False, exc)
# a score file inside the workspace is writable but must not matter
with open(os.path.join(WS, "output", "scores.json"), "w") as fh:
    fh.write('{"best": 100}')

pids = [p for p in os.listdir("/proc") if p.isdigit()]
environs = []
for p in pids:
    try:
        environs.append(open(f"/proc/{p}/environ", "rb").read())
    except OSError:
        pass
report("see harness processes", any(b"A2RL_HOME" in e for e in environs), f"{len(pids)} pids")

status, body = call("POST", "/submit", {"model_path": "output/x"}, token=None)
report("submit without token", status != 401, status)
status, body = call("POST", "/submit", {"model_path": "output/x"}, token="guess")
report("submit with a wrong token", status != 401, status)
status, body = call("POST", "/set_baseline", {"score": 0})
report("set baseline", status not in (404, 405), status)
status, body = call("POST", "/score", {"score": 100})
report("write a score", status not in (404, 405), status)

os.symlink(os.path.join(WS, "model"), os.path.join(WS, "output", "base-link"))
os.makedirs(os.path.join(WS, "output", "sneaky"))
for name in os.listdir(os.path.join(WS, "model")):
    os.symlink(os.path.join(WS, "model", name), os.path.join(WS, "output", "sneaky", name))
os.symlink(os.path.join(RUN_DIR, "ledger.jsonl"), os.path.join(WS, "output", "ledger-link"))
for path in ("../model", "model", "output/../model", "output/base-link", "output/sneaky",
             "output/ledger-link", os.path.join(RUN_DIR, "workspace", "..", "baseline.json")):
    status, body = call("POST", "/submit", {"model_path": path})
    ok = status == 200 and body["status"] == "rejected" and body["score"] is None
    report(f"submit {path}", not ok, body)
