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

# ---- issue 17: path escapes, hostile checkpoints, floods (every one must end `rejected`) ----
import shutil  # noqa: E402
import struct  # noqa: E402

OUT = os.path.join(WS, "output")
MODEL = os.path.join(WS, "model")


def submit_expect_rejected(name, path, raw_body=None):
    """The attack is blocked when the grader answers 200 with a `rejected` record, no score, and
    a reply that names no host path beyond the text the agent itself sent."""
    if raw_body is not None:
        req = urllib.request.Request(URL + "/submit", method="POST", data=raw_body,
                                     headers={"Authorization": "Bearer " + TOKEN})
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                status, body = r.status, json.load(r)
        except urllib.error.HTTPError as exc:
            status, body = exc.code, exc.read().decode(errors="replace")
    else:
        status, body = call("POST", "/submit", {"model_path": path})
    text = json.dumps(body).replace(json.dumps(path)[1:-1] if isinstance(path, str) else "", "")
    host_path = RUN_DIR.rsplit("/", 1)[0] in text.replace(WS, "")
    ok = (status == 422 and raw_body is not None) or (
        status == 200 and isinstance(body, dict) and body.get("status") == "rejected"
        and body.get("score") is None)
    report(name, not ok or host_path, (status, body))


def fresh_copy(name):
    dst = os.path.join(OUT, name)
    shutil.copytree(MODEL, dst)
    os.chmod(dst, 0o755)
    for f in os.listdir(dst):
        os.chmod(os.path.join(dst, f), 0o644)
    return dst


# output/ itself replaced by a symlink: to the host root, to the run dir, to another run.
os.rename(OUT, OUT + ".real")
for target in ("/", RUN_DIR, os.path.dirname(RUN_DIR), "/proc/self/root" + WS):
    os.symlink(target, OUT)
    for sub in ("etc", "workspace/model", "adversary-run/workspace/output", "model"):
        submit_expect_rejected(f"submit through symlinked output/ -> {target} ({sub})",
                               "output/" + sub)
    os.unlink(OUT)
os.rename(OUT + ".real", OUT)

# absolute, /proc and .. paths, odd strings
for path in ("/proc/self/root" + MODEL, "/proc/self/cwd/model", "/proc/1/root/etc",
             "/proc/self/fd/0", OUT + "/../model", WS + "/output/../../ledger.jsonl",
             "output/" + "a" * 5000, "output/%2e%2e/model", "~/output", "output/\u202emodel"):
    submit_expect_rejected(f"submit {path[:60]}", path)
submit_expect_rejected("submit a lone surrogate", None,
                       raw_body=b'{"model_path": "output/\\ud800"}')
submit_expect_rejected("submit a NUL byte", None, raw_body=b'{"model_path": "output/\\u0000x"}')

# symlinks inside an otherwise real model folder, fifos, a device link
d = fresh_copy("one-link")
os.unlink(os.path.join(d, "config.json"))
os.symlink(os.path.join(RUN_DIR, "run.json"), os.path.join(d, "config.json"))
submit_expect_rejected("submit a model whose config.json links to run.json", "output/one-link")
d = fresh_copy("zero-link")
os.symlink("/dev/zero", os.path.join(d, "extra.safetensors"))
submit_expect_rejected("submit a model with a /dev/zero link", "output/zero-link")
d = fresh_copy("fifo")
os.mkfifo(os.path.join(d, "generation_config.json.tmp"))
submit_expect_rejected("submit a model with a fifo", "output/fifo")

# huge and hostile safetensors headers, parsed nowhere near the grader's request thread
d = fresh_copy("huge-header")
n = 80 << 20
with open(os.path.join(d, "model.safetensors"), "wb") as fh:
    fh.write(struct.pack("<Q", n) + b"{" + b" " * (n - 2) + b"}")
submit_expect_rejected("submit an 80 MB safetensors header", "output/huge-header")
shutil.rmtree(d)

# malformed config.json variants: each is rejected and grading goes on
for i, blob in enumerate([b"[" * 100000 + b"]" * 100000, b"\xff\xfe", b"[1, 2]", b"null",
                          b'{"model_type": "[/x]"', b"{}"]):
    d = fresh_copy(f"cfg{i}")
    with open(os.path.join(d, "config.json"), "wb") as fh:
        fh.write(blob)
    submit_expect_rejected(f"submit malformed config.json #{i}", f"output/cfg{i}")

# the hidden-final endpoint cannot designate anything unscored (or anything, in a plain run)
status, body = call("POST", "/final", {"model_path": "output/cfg0"})
report("designate an unscored model as final", status == 200, (status, body))

# a flood of submissions: every one ends in a record, the grader keeps answering
# (that a flood does not slow later requests is checked without a clock, in
# tests/test_adversarial_grader.py: a request parses no ledger line it did not write)
codes = []
for i in range(150):
    status, body = call("POST", "/submit", {"model_path": f"../flood{i}"})
    codes.append(status if status != 200 else body.get("status"))
report("flood: every request recorded as rejected", set(codes) != {"rejected"}, set(codes))
status, body = call("GET", "/submissions")
stuck = [s for s in body if s["status"] == "pending"] if isinstance(body, list) else body
report("flood: nothing left pending", bool(stuck), len(body) if isinstance(body, list) else body)

def names_host_path(entry):
    """A host path in a listed record other than inside the text the agent itself sent."""
    sent = json.dumps(entry.get("model_path", ""))[1:-1]
    text = json.dumps(entry).replace(sent, "") if sent else json.dumps(entry)
    return RUN_DIR.rsplit("/", 1)[0] in text.replace(json.dumps(WS)[1:-1], "")


report("flood: replies name no host path",
       not isinstance(body, list) or any(names_host_path(e) for e in body),
       [e for e in body if names_host_path(e)][:2] if isinstance(body, list) else body)
