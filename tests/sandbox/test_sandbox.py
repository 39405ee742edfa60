"""What the agent can and cannot reach from inside the sandbox: files, writes and the network.

A probe agent tries each thing and prints one JSON line per attempt; the tests read the
transcript. (The adversarial agent of test_integration covers the grader's own defences.)"""

from __future__ import annotations

import base64
import json
import shutil
import uuid
from pathlib import Path

import pytest
from fastapi import FastAPI

from a2rl.runner import run
from a2rl.schema import RunConfig
from conftest import TINY_TASK, serve_on_loopback

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")

PROBE = r'''
import json, os, socket, sys, urllib.request
targets = json.loads(sys.argv[1])

def out(name, ok, detail=""):
    print(json.dumps({"probe": name, "ok": ok, "detail": str(detail)[:200]}), flush=True)

for name, path in targets["read"].items():
    try:
        with open(path, "rb") as fh:
            out("read " + name, True, fh.read(50))
    except OSError as exc:
        out("read " + name, False, exc)
for name, path in targets["list"].items():
    try:
        print(json.dumps({"listing": name, "names": sorted(os.listdir(path))}), flush=True)
    except OSError as exc:
        out("list " + name, False, exc)
for name, path in targets["write"].items():
    try:
        with open(path, "w") as fh:
            fh.write("x")
        out("write " + name, True, path)
    except OSError as exc:
        out("write " + name, False, exc)
for name, port in targets["connect"].items():
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        out("connect " + name, True)
    except OSError as exc:
        out("connect " + name, False, exc)
req = urllib.request.Request(os.environ["A2RL_GRADER_URL"] + "/status",
                             headers={"Authorization": "Bearer " + os.environ["A2RL_TOKEN"]})
try:
    with urllib.request.urlopen(req, timeout=10) as r:
        out("grader status", True, json.load(r)["remaining_seconds"])
except Exception as exc:
    out("grader status", False, exc)
'''


def probe_agent(targets: dict[str, dict[str, object]]) -> str:
    blob = base64.b64encode(PROBE.encode()).decode()
    arg = base64.b64encode(json.dumps(targets).encode()).decode()
    return (f"cmd:echo {blob} | base64 -d > /tmp/probe.py && "
            f"python /tmp/probe.py \"$(echo {arg} | base64 -d)\"")


def run_probe(root: Path, model: Path, a2rl_home: Path, targets: dict[str, dict[str, object]],
              **kw: object) -> dict[str, object]:
    rid = f"probe-{uuid.uuid4().hex[:6]}"
    config = RunConfig(task="arith", task_params=dict(TINY_TASK), agent=probe_agent(targets),
                       model=str(model), mode="free", budget_s=120, sandbox="bwrap",
                       eval_timeout_s=1800, grace_s=2, port=0, runs_dir=str(root / "runs"), **kw)
    from a2rl.runner._run import run as run_fn

    rec = run_fn(config, run_id=rid)
    assert rec.status == "finished", rec.error
    expected = ["network_full"] if config.network == "full" else []
    assert rec.flags == expected  # a shared host network is flagged with the result
    transcript = (root / "runs" / "arith" / rid / "agent" / "transcript.log").read_text()
    results: dict[str, object] = {}
    for line in transcript.splitlines():
        if line.startswith('{"probe"'):
            d = json.loads(line)
            results[d["probe"]] = d["ok"]
        elif line.startswith('{"listing"'):
            d = json.loads(line)
            results["list " + d["listing"]] = d["names"]
    return results


@pytest.fixture
def outside(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A root outside /tmp (the sandbox's /tmp is private, so writes there prove nothing)."""
    from a2rl.workspace import remove_workspace_tree

    root = Path("/var/tmp") / f"a2rl-sbx-{uuid.uuid4().hex[:8]}"
    root.mkdir()
    yield root
    remove_workspace_tree(root)


def test_files_outside_the_workspace_are_out_of_reach(outside: Path, tiny_model: Path,
                                                      a2rl_home: Path) -> None:
    # another run, finished earlier, with its own workspace and ledger
    other = outside / "runs" / "arith" / "earlier-run"
    (other / "workspace" / "code").mkdir(parents=True)
    (other / "workspace" / "code" / "train.py").write_text("secret recipe")
    (other / "ledger.jsonl").write_text("{}\n")
    (a2rl_home / "secrets").mkdir(exist_ok=True)
    (a2rl_home / "secrets" / "arith-heldout-seed").write_text("123\n")
    home = Path.home()
    targets = {
        "read": {"other run's code": str(other / "workspace" / "code" / "train.py"),
                 "other run's ledger": str(other / "ledger.jsonl"),
                 "held-out seed": str(a2rl_home / "secrets" / "arith-heldout-seed"),
                 "/root": "/root/.bashrc", "user home": str(home / ".bashrc")},
        # Parents of mounted folders exist as empty skeletons: only the mount path shows.
        "list": {"runs of this task": str(outside / "runs" / "arith"), "/root": "/root",
                 "a2rl home": str(a2rl_home), "workspace": "."},
        "write": {"run dir": str(outside / "runs" / "arith" / "forged.json"),
                  "/usr": "/usr/forged", "/etc": "/etc/forged", "/var/tmp": "/var/tmp/forged",
                  "workspace root": "forged-ok.txt", "code": "code/ok.py", "tmp": "/tmp/ok"},
        "connect": {}}
    r = run_probe(outside, tiny_model, a2rl_home, targets, network="full")
    must_fail = [k for k in r if k.startswith(("read", "write")) and k not in (
        "write workspace root", "write code", "write tmp")]
    assert len(must_fail) == 9 and not [k for k in must_fail if r[k]], r
    assert r["write workspace root"] and r["write code"] and r["write tmp"] and r["grader status"]
    assert "earlier-run" not in r["list runs of this task"], r  # type: ignore[operator]
    assert set(r["list /root"]) <= {".pyenv"}, r  # type: ignore[arg-type]
    assert r["list a2rl home"] is False  # not even a skeleton
    assert "description.md" in r["list workspace"]  # type: ignore[operator]
    assert not (outside / "runs" / "arith" / "forged.json").exists()


def test_private_networks_reach_only_the_grader(outside: Path, tiny_model: Path,
                                              a2rl_home: Path) -> None:
    app = FastAPI()

    @app.get("/")
    def hello() -> dict[str, str]:
        return {"hello": "world"}

    with serve_on_loopback(app) as other_port, serve_on_loopback(app) as driver_port:
        targets: dict[str, dict[str, object]] = {
            "read": {}, "list": {}, "write": {},
            "connect": {"other loopback service": other_port, "driver endpoint": driver_port}}
        full = run_probe(outside, tiny_model, a2rl_home, targets, network="full")
        assert full["connect other loopback service"] and full["grader status"]
        for policy in ("none", "allowlist"):  # allowlist is the default
            private = run_probe(outside, tiny_model, a2rl_home, targets, network=policy,
                                driver_base_url=f"http://127.0.0.1:{driver_port}/v1")
            assert private["grader status"], private  # relayed into the private namespace
            assert private["connect driver endpoint"], private  # a loopback driver too
            assert not private["connect other loopback service"], private


def test_network_none_refuses_a_hosted_driver(tmp_path: Path, tiny_model: Path) -> None:
    from a2rl._errors import A2RLError

    config = RunConfig(task="arith", task_params=dict(TINY_TASK), agent="cmd:true",
                       model=str(tiny_model), mode="free", budget_s=60, sandbox="bwrap",
                       eval_timeout_s=60, grace_s=1, port=0, runs_dir=str(tmp_path / "runs"),
                       network="none", driver_base_url="https://api.example.com/v1")
    with pytest.raises(A2RLError, match="--network full"):
        run(config)
