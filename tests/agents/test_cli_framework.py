"""The shared parts of the CLI launchers: the in-sandbox session runner (re-prompt loop), secret
scrubbing of the transcript, credential selection, install errors and `a2rl agents`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from scripted_llm import agent_context
from typer.testing import CliRunner

from a2rl._errors import A2RLError
from a2rl.agents import AgentContext, get_agent
from a2rl.agents._cli import (
    REPROMPT,
    SPEC_ENV,
    CLIAgent,
    CLIPackage,
    SessionSpec,
    install,
)
from a2rl.agents._stream import as_int, json_lines, read_transcript, relative_path
from a2rl.runner import AgentProcess
from a2rl.schema import AgentEvent
from conftest import serve_on_loopback

CLI_AGENTS = ("claude-code", "codex", "opencode", "gemini", "openhands")


def status_server(remaining: list[float]) -> FastAPI:
    """A grader stand-in whose /status reports the given remaining times, one per call."""
    app = FastAPI()
    calls = iter(remaining)

    @app.get("/status")
    def status() -> dict[str, Any]:
        return {"remaining_seconds": next(calls, 0.0)}

    return app


def test_session_reprompts_while_budget_remains(tmp_path: Path) -> None:
    say = [sys.executable, "-c", "import sys; print('CLI', sys.argv[1], flush=True)"]
    spec = SessionSpec(argv=[*say, "first"], resume_argv=[*say, REPROMPT],
                       home_files={".cli/config.json": '{"ok": true}'}, reprompt=True,
                       reserve_s=300)
    with serve_on_loopback(status_server([5000, 1200, 100])) as port:
        env = {**os.environ, SPEC_ENV: spec.encode(), "HOME": str(tmp_path),
               "A2RL_GRADER_URL": f"http://127.0.0.1:{port}", "A2RL_TOKEN": "t"}
        done = subprocess.run([sys.executable, "-m", "a2rl.agents._cli_session"], env=env,
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # first round, then two continuations (5000 s and 1200 s left), stop below the reserve
    assert lines[0] == "CLI first" and len(lines) == 3, lines
    assert "Time remains in your budget (83 min)" in lines[1]
    assert "(20 min)" in lines[2] and "{remaining}" not in done.stdout
    assert (tmp_path / ".cli" / "config.json").read_text() == '{"ok": true}'
    assert oct((tmp_path / ".cli" / "config.json").stat().st_mode)[-3:] == "600"
    assert done.stderr.count('"round_start"') == 3


def test_session_without_reprompt_runs_once(tmp_path: Path) -> None:
    spec = SessionSpec(argv=[sys.executable, "-c", "import sys; sys.exit(3)"],
                       resume_argv=["false"], reprompt=False)
    with serve_on_loopback(status_server([5000])) as port:
        env = {**os.environ, SPEC_ENV: spec.encode(), "HOME": str(tmp_path),
               "A2RL_GRADER_URL": f"http://127.0.0.1:{port}", "A2RL_TOKEN": "t"}
        done = subprocess.run([sys.executable, "-m", "a2rl.agents._cli_session"], env=env,
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and done.stderr.count('"round_start"') == 1


def test_transcript_is_scrubbed_and_timed(tmp_path: Path) -> None:
    secret = "sk-live-0123456789abcdef"
    proc = AgentProcess([sys.executable, "-c", f"print('key={secret}'); print('bye')"],
                        env=dict(os.environ), cwd=tmp_path, secrets=[secret],
                        transcript=tmp_path / "agent" / "transcript.log")
    proc.proc.wait()
    proc.close()
    text = (tmp_path / "agent" / "transcript.log").read_text()
    assert secret not in text and "key=[REDACTED]" in text
    lines = list(read_transcript(tmp_path / "agent"))
    assert [line for _, line in lines] == ["key=[REDACTED]", "bye"]
    assert all(t >= 0 for t, _ in lines)


class _Fake(CLIAgent):
    name = "fake"
    package = CLIPackage("npm", "fake-cli", "1.0.0", "fake")
    credentials = ("FAKE_API_KEY", "FAKE_TOKEN")
    memory_file = "FAKE.md"
    default_driver = "fake-model"

    def cli_argv(self, ctx: AgentContext, exe: str, prompt: str, *, resume: bool) -> list[str]:
        return [exe, "--resume" if resume else "--new", prompt]

    def parse_events(self, lines: Iterable[tuple[float, str]]) -> list[AgentEvent]:
        return [AgentEvent(kind="message", turn=0, t_s=t, text=line) for t, line in lines]


def _ctx(tmp_path: Path, **kw: Any) -> AgentContext:
    return agent_context(tmp_path, budget_s=60, python=sys.executable, **kw)  # type: ignore[no-any-return]


def test_stream_helpers_shared_by_the_parsers() -> None:
    # token counts: JSON true/false, null, strings and floats are not counts
    assert [as_int(v) for v in (7, 0, True, False, None, "12", 1.5)] == [7, 0, 0, 0, 0, 0, 0]
    # paths: first root that contains it, then the workspace marker when asked, else unchanged
    assert relative_path("/w/code/a.py", [None, "/x", "/w/"]) == "code/a.py"
    assert relative_path("/w2/code/a.py", ["/w"]) == "/w2/code/a.py"
    assert relative_path("/r/runs/t/1/workspace/output/v1", ["/w"], by_marker=True) == "output/v1"
    assert relative_path("/etc/passwd", ["/w"], by_marker=True) == "/etc/passwd"
    # plain log lines, broken JSON and non-object JSON are skipped
    lines = [(0.5, "starting"), (1.0, '{"type": "a"}'), (1.5, "{broken"), (2.0, " [1, 2]"),
             (2.5, '  {"type": "b"}  ')]
    assert list(json_lines(lines)) == [(1.0, {"type": "a"}), (2.5, {"type": "b"})]


def test_credentials_only_those_set_and_a_clear_error(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    agent = _Fake()
    monkeypatch.delenv("FAKE_API_KEY", raising=False)
    monkeypatch.delenv("FAKE_TOKEN", raising=False)
    with pytest.raises(A2RLError, match="FAKE_API_KEY, FAKE_TOKEN") as err:
        agent.credential_values(_ctx(tmp_path))
    assert "export FAKE_API_KEY" in (err.value.fix or "")
    assert agent.credential_values(_ctx(tmp_path, driver_base_url="http://x/v1")) == {}
    monkeypatch.setenv("FAKE_TOKEN", "tok-123456")
    monkeypatch.setenv("JUDGE_KEY_THAT_MUST_NOT_LEAK", "judge-secret")
    assert agent.credential_values(_ctx(tmp_path)) == {"FAKE_TOKEN": "tok-123456"}
    assert agent.secrets(_ctx(tmp_path)) == ["tok-123456"]


def test_prompt_memory_file_and_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_API_KEY", "k-1234567")
    agent = _Fake()
    ctx = _ctx(tmp_path, options={"reprompt": "1", "reserve_s": "120"})
    agent.prepare(ctx)
    memory = (ctx.workspace.root / "FAKE.md").read_text()
    assert "Do well." in memory and "Facts about this machine" in memory
    prompt = agent.prompt(ctx)
    assert "Do well." in prompt and "Add numbers." in prompt
    monkeypatch.setattr(_Fake, "executable", lambda self: Path("/opt/fake"))
    spec = agent.session_spec(ctx)
    assert spec.argv[:2] == ["/opt/fake", "--new"] and spec.argv[2] == prompt
    assert spec.resume_argv == ["/opt/fake", "--resume", REPROMPT]
    assert spec.reprompt and spec.reserve_s == 120
    env = agent.environment(ctx)
    assert env["FAKE_API_KEY"] == "k-1234567" and SPEC_ENV in env
    assert SessionSpec.decode(env[SPEC_ENV]) == spec
    assert "JUDGE" not in " ".join(env)


def test_uninstalled_cli_says_how_to_install(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2RL_AGENTS_DIR", str(tmp_path / "agents"))
    with pytest.raises(A2RLError, match="not installed") as err:
        _Fake().executable()
    assert "a2rl agents install fake" in (err.value.fix or "")


def test_install_failure_is_explained_and_cleaned(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2RL_AGENTS_DIR", str(tmp_path / "agents"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no npm anywhere
    with pytest.raises(A2RLError, match="npm is not installed"):
        install("fake", _Fake.package)
    missing_python = CLIPackage("pip", "nothing", "1.0", "nothing", python="2.1")
    with pytest.raises(A2RLError, match="needs Python 2.1"):
        install("fake", missing_python)
    assert not (tmp_path / "agents" / "fake-1.0").exists()


def test_agents_list_shows_pins_install_state_and_credentials(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from a2rl.cli import app

    monkeypatch.setenv("A2RL_AGENTS_DIR", str(tmp_path / "agents"))
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x" * 12)
    result = CliRunner().invoke(app, ["agents", "list"])
    assert result.exit_code == 0, result.output
    for name in CLI_AGENTS:
        agent = get_agent(name)
        assert isinstance(agent, CLIAgent)
        assert name in result.output and agent.package.version in result.output
    assert "ANTHROPIC_API_KEY ✔" in result.output and "a2rl agents install" in result.output
    bad = CliRunner().invoke(app, ["agents", "install", "reference"])
    assert bad.exit_code != 0


def test_every_cli_launcher_is_complete() -> None:
    for name in CLI_AGENTS:
        agent = get_agent(name)
        assert isinstance(agent, CLIAgent) and agent.name == name
        assert agent.package.version[0].isdigit() and agent.credentials
        assert agent.memory_file and agent.default_driver and agent.description
