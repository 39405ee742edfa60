"""Plan, shared state and the run/check helpers of the scripted LLM server."""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request

FAKE_KEY = "sk-a2rl-test-0123456789abcdefSECRET"
"""The 'API key' tests give the CLI: it must never appear in anything the harness writes."""

SHELL_TOOL_NAMES = ("bash", "shell", "exec_command", "run_shell_command", "shell_command",
                    "execute_bash", "local_shell", "terminal", "cmd_run")

TRAIN_PY = '''\
"""Scripted 'training' (tests the plumbing, not learning): nudges one weight, saves output/v1."""
import os, shutil
from safetensors.torch import load_file, save_file
src, dst = os.environ["MODEL_PATH"], os.path.join(os.environ["OUTPUT_DIR"], "v1")
shutil.copytree(src, dst, dirs_exist_ok=True)
os.chmod(dst, 0o755)
for name in os.listdir(dst):
    os.chmod(os.path.join(dst, name), 0o644)
weights = load_file(os.path.join(dst, "model.safetensors"))
first = sorted(k for k, v in weights.items() if v.is_floating_point())[0]
weights[first] = weights[first] * 1.001
save_file(weights, os.path.join(dst, "model.safetensors"), metadata={"format": "pt"})
print("SAVED", dst)
'''


@dataclass(frozen=True)
class Step:
    """One assistant turn: a shell command to run (None: the final answer) and a short text."""

    command: str | None
    text: str


DEFAULT_PLAN: tuple[Step, ...] = (
    Step("mkdir -p code && cat > code/train.py <<'PY'\n" + TRAIN_PY + "PY\necho WROTE",
         "I will write a training script."),
    Step("python code/train.py", "Running it."),
    Step('curl -s -X POST "$A2RL_GRADER_URL/submit" -H "Authorization: Bearer $A2RL_TOKEN" '
         '-H "Content-Type: application/json" -d \'{"model_path": "output/v1"}\'',
         "Submitting output/v1."),
    Step("./timer.sh", "Checking the time left."),
    Step(None, "Submitted output/v1. Done."),
)


@dataclass
class Sent:
    """One response the server sent, with the usage figures it reported."""

    route: str
    main: bool
    """True for the agent loop's requests (they offer a shell tool); False for side requests
    (titles, summaries, checks)."""
    step: int | None
    input_tokens: int
    output_tokens: int


@dataclass
class Script:
    """Shared state: the plan, every request received, every usage figure sent."""

    plan: tuple[Step, ...] = DEFAULT_PLAN
    side_reply: Callable[[dict[str, Any]], str] | None = None
    """The text answering a side request (no shell tool offered), from its body: a scripted
    judge's rule. None: a short fixed text."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def step(self, n_tool_results: int) -> Step:
        """The step after `n_tool_results` tool results (stateless: retries get the same)."""
        return self.plan[min(n_tool_results, len(self.plan) - 1)]

    def record_request(self, route: str, body: Any, headers: dict[str, str]) -> None:
        with self.lock:
            self.requests.append({"route": route, "body": body, "headers": headers})

    def usage(self, route: str, *, main: bool, step: int | None) -> Sent:
        """Deterministic, distinct usage figures for the next response (recorded)."""
        with self.lock:
            k = len(self.sent)
            s = Sent(route, main, step, input_tokens=1000 + 37 * k, output_tokens=20 + 3 * k)
            self.sent.append(s)
            return s

    def totals(self, *, main_only: bool = False) -> tuple[int, int]:
        chosen = [s for s in self.sent if s.main or not main_only]
        return sum(s.input_tokens for s in chosen), sum(s.output_tokens for s in chosen)


def shell_tool(tools: list[tuple[str, dict[str, Any]]]) -> tuple[str, dict[str, Any]] | None:
    """(name, JSON schema of its parameters) of the shell tool among `tools`, if any."""
    by_name = {name.lower(): (name, schema) for name, schema in tools}
    for candidate in SHELL_TOOL_NAMES:
        if candidate in by_name:
            return by_name[candidate]
    return None


def shell_arguments(schema: dict[str, Any], command: str) -> dict[str, Any]:
    """Arguments for a shell tool with this JSON schema that run `command` with bash."""
    props: dict[str, Any] = schema.get("properties", {}) or {}
    args: dict[str, Any] = {}
    key = next((k for k in ("command", "cmd", "commands", "script") if k in props), "command")
    kind = str(props.get(key, {}).get("type", "string")).lower()
    args[key] = ["bash", "-lc", command] if kind == "array" else command
    for name in schema.get("required", []) or []:
        if name in args:
            continue
        if props.get(name, {}).get("enum"):  # e.g. OpenHands' security_risk
            args[name] = props[name]["enum"][0]
            continue
        t = str(props.get(name, {}).get("type", "string")).lower()
        args[name] = {"boolean": False, "integer": 600000, "number": 600000,
                      "array": []}.get(t, "scripted step")
    if "description" in props and "description" not in args:
        args["description"] = "scripted step"
    return args


def create_app(script: Script, protocols: list[str]) -> FastAPI:
    """The server with the given protocol modules (scripted_llm.<name>.add_routes)."""
    app = FastAPI()
    for name in protocols:
        importlib.import_module(f"scripted_llm.{name}").add_routes(app, script)

    @app.middleware("http")
    async def log_unknown(request: Request, call_next: Any) -> Any:
        response = await call_next(request)
        if response.status_code == 404:
            script.record_request(f"404 {request.method} {request.url.path}", None, {})
        return response

    return app


def agent_context(root: Path, **overrides: Any) -> Any:
    """A launcher unit test's AgentContext: a fake workspace at `root/ws` holding only the two
    files a CLI prompt is built from (instructions.md, description.md)."""
    from a2rl.agents import AgentContext
    from a2rl.schema import RunConfig
    from a2rl.workspace import Workspace

    ws = root / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "instructions.md").write_text("# Instructions\nDo well.")
    (ws / "description.md").write_text("# Task\nAdd numbers.")
    # run options (options= is --agent-opt) go into the run config, the rest to the context
    run = {"budget_s": 600, "network": "full", "runs_dir": str(root / "runs"),
           **{("agent_options" if k == "options" else k): overrides.pop(k)
              for k in ("budget_s", "mode", "options", "driver", "driver_base_url", "network")
              if k in overrides}}
    fields: dict[str, Any] = dict(
        workspace=Workspace(ws), grader_url="http://127.0.0.1:1", token="t",
        config=RunConfig(**run), task="arith", python="/usr/bin/python3")
    fields.update(overrides)
    return AgentContext(**fields)


def stream_fixture(name: str) -> list[tuple[float, str]]:
    """A recorded real CLI stream from tests/fixtures, one second per line."""
    path = Path(__file__).parent.parent / "fixtures" / name
    return [(float(i), line) for i, line in enumerate(path.read_text().splitlines())]


def run_cli_agent(tmp_path: Path, model: Path, agent: str, base_url: str,
                  monkeypatch: pytest.MonkeyPatch, *, key_env: str,
                  driver: str = "scripted-model", **config: Any) -> tuple[Any, Path]:
    """A real run (sandboxed, tiny task) of a CLI agent driven by the scripted server."""
    from a2rl.runner import run
    from a2rl.schema import RunConfig
    from conftest import TINY_TASK

    monkeypatch.setenv(key_env, FAKE_KEY)
    base: dict[str, Any] = dict(
        task="arith", task_params=dict(TINY_TASK), agent=agent, model=str(model), mode="free",
        budget_s=900, sandbox="bwrap", eval_timeout_s=1800, grace_s=5, port=0,
        runs_dir=str(tmp_path / "runs"), driver=driver, driver_base_url=base_url)
    base.update(config)
    rec = run(RunConfig(**base))
    return rec, tmp_path / "runs" / "arith" / rec.run_id


@dataclass
class ScriptedRun:
    """What a real CLI run against the scripted server left, already checked by
    `assert_scripted_run`."""

    script: Script
    record: Any
    run_dir: Path
    events: list[Any]


def scripted_cli_run(root: Path, model: Path, agent: str, protocol: str,
                     monkeypatch: pytest.MonkeyPatch, *, key_env: str, api_path: str = "",
                     **config: Any) -> ScriptedRun:
    """The end-to-end test of a CLI launcher: serve the default plan over `protocol` on
    loopback, run the agent for real against it (runs under `root`), keep every request the CLI
    sent (`root/requests.jsonl`, a debug aid) and check what every such run must show."""
    from conftest import serve_on_loopback

    script = Script()
    with serve_on_loopback(create_app(script, [protocol])) as port:
        rec, run_dir = run_cli_agent(root, model, agent, f"http://127.0.0.1:{port}{api_path}",
                                     monkeypatch, key_env=key_env, **config)
    dump_requests(script, root / "requests.jsonl")
    return ScriptedRun(script, rec, run_dir, assert_scripted_run(rec, run_dir, script))


def assert_scripted_run(rec: Any, run_dir: Path, script: Script) -> list[Any]:
    """What every CLI run against the default plan must show; returns the agent events."""
    from a2rl.schema import AgentEvent

    transcript = (run_dir / "agent" / "transcript.log").read_text()
    assert rec.status == "finished", (rec.error, transcript[-3000:])
    # the scripted submission reached the grader and was scored
    assert [s.model_path for s in rec.submissions] == ["output/v1"], transcript[-3000:]
    assert rec.submissions[0].status == "scored", rec.submissions[0]
    assert (run_dir / "workspace" / "code" / "train.py").exists()
    # the normalised event log parses and shows the plan's commands
    events = [AgentEvent.model_validate_json(line) for line in
              (run_dir / "agent" / "events.jsonl").read_text().splitlines()]
    commands = [e.command or "" for e in events if e.kind == "command"]
    for needle in ("code/train.py", "python code/train.py", "/submit", "timer.sh"):
        assert any(needle in c for c in commands), (needle, commands)
    assert any(e.kind == "turn" for e in events)
    # the key never reaches anything the harness wrote
    for path in run_dir.rglob("*"):
        if path.is_file() and path.suffix != ".safetensors" and ".git" not in path.parts:
            assert FAKE_KEY not in path.read_text(errors="ignore"), path
    return events


def reported_usage(events: list[Any]) -> tuple[int, int]:
    usage = [e for e in events if e.kind == "usage"]
    return (sum(e.input_tokens or 0 for e in usage), sum(e.output_tokens or 0 for e in usage))


def dump_requests(script: Script, path: Path) -> None:
    """Debug aid: every request the CLI sent, as JSON lines."""
    path.write_text("".join(json.dumps(r, default=str) + "\n" for r in script.requests))
