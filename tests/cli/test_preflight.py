"""Refused before anything runs: each wrong agent setup (a missing key, a CLI that is not
installed, an unknown recipe or option, a driver given to an agent that takes none) exits with
code 2 through the real command line, names the fix, and leaves no run folder and no baseline
behind (the checks come before the run folder, the model and the baseline)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CREDENTIALS = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN")


def refused(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run `a2rl run … --runs-dir tmp` and check the refusal; its stderr."""
    runs, home = tmp_path / "runs", tmp_path / "home"
    base = {k: v for k, v in os.environ.items() if k not in CREDENTIALS}
    out = subprocess.run(
        [sys.executable, "-m", "a2rl.cli", "run", "--task", "arith", "--budget", "5m",
         "--runs-dir", str(runs), *args], capture_output=True, text=True, timeout=300,
        env={**base, "A2RL_HOME": str(home), "COLUMNS": "200", **(env or {})})
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "fix:" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert not list(runs.glob("*/*")), "a run folder was created"
    assert not (home / "baselines").exists(), "a baseline was scored"
    assert "a2rl run" not in out.stdout  # the run's headline is never printed
    return " ".join(out.stderr.split())


@pytest.fixture
def no_clis(tmp_path: Path) -> dict[str, str]:
    """An agents folder holding no CLI."""
    empty = tmp_path / "agents"
    empty.mkdir()
    return {"A2RL_AGENTS_DIR": str(empty)}


def test_missing_key(tmp_path: Path, no_clis: dict[str, str]) -> None:
    err = refused(tmp_path, "--agent", "claude-code", "--driver", "claude-sonnet-4-5",
                  env=no_clis)
    assert "ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN" in err
    assert "export ANTHROPIC_API_KEY=<key>" in err and "--driver-base-url" in err


def test_cli_not_installed(tmp_path: Path, no_clis: dict[str, str]) -> None:
    err = refused(tmp_path, "--agent", "codex", "--driver-base-url", "http://127.0.0.1:9/v1",
                  env=no_clis)
    assert "codex CLI (@openai/codex@" in err and "is not installed" in err
    assert "a2rl agents install codex" in err
    assert "OPENAI_API_KEY" not in err  # an endpoint needs no key: only the CLI is missing


def test_another_version_of_the_cli_is_not_the_pinned_one(tmp_path: Path,
                                                          no_clis: dict[str, str]) -> None:
    old = Path(no_clis["A2RL_AGENTS_DIR"]) / "gemini-0.1.0" / "node_modules" / ".bin"
    old.mkdir(parents=True)
    (old / "gemini").write_text("#!/bin/sh\n")
    err = refused(tmp_path, "--agent", "gemini", "--driver-base-url", "http://127.0.0.1:9/v1",
                  env=no_clis)
    assert "only other versions: gemini-0.1.0" in err and "a2rl agents install gemini" in err


def test_unknown_recipe(tmp_path: Path) -> None:
    err = refused(tmp_path, "--agent", "reference", "--agent-opt", "recipe=dpo")
    assert "recipe='dpo' is not one of sft, rft, grpo, rollout-rft" in err
    assert "--agent-opt recipe=<sft|rft|grpo|rollout-rft>" in err


def test_unknown_and_malformed_agent_options(tmp_path: Path) -> None:
    err = refused(tmp_path, "--agent", "reference", "--agent-opt", "stpes=3",
                  "--agent-opt", "steps=ten")
    assert "agent reference has no option stpes" in err and "steps='ten' is not an integer" in err
    assert "--agent-opt keys of reference:" in err and "batch_size" in err


def test_unknown_option_of_a_cli_agent(tmp_path: Path, no_clis: dict[str, str]) -> None:
    err = refused(tmp_path, "--agent", "claude-code", "--agent-opt", "efort=high", env=no_clis)
    assert "agent claude-code has no option efort" in err and "effort" in err


def test_driver_on_a_command_agent(tmp_path: Path) -> None:
    err = refused(tmp_path, "--agent", "cmd:./my_agent.sh", "--driver", "claude-sonnet-4-5")
    assert "agent cmd runs on no driver LLM, so --driver would be ignored" in err
    assert "drop --driver" in err


def test_driver_on_the_reference_agent(tmp_path: Path) -> None:
    err = refused(tmp_path, "--agent", "reference", "--driver", "gpt-5",
                  "--driver-base-url", "http://127.0.0.1:9/v1")
    assert "--driver and --driver-base-url would be ignored" in err
    assert "drop --driver and --driver-base-url" in err


def test_foreign_driver_for_a_cli(tmp_path: Path, no_clis: dict[str, str]) -> None:
    err = refused(tmp_path, "--agent", "codex", "--driver", "claude-sonnet-4-5", env=no_clis)
    assert "does not serve driver 'claude-sonnet-4-5'" in err
    assert "default gpt-" in err and "--driver-base-url" in err
