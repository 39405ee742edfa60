"""The command line: fast --help, and bad input named with a fix (exit code 2)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

A2RL = [sys.executable, "-m", "a2rl.cli"]


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    return subprocess.run([*A2RL, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})}, cwd=cwd)


def test_import_and_help_do_not_load_torch() -> None:
    code = ("import sys, a2rl, a2rl.cli; a2rl.__version__; "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
    start = time.monotonic()
    out = run_cli("--help")
    assert out.returncode == 0 and "run" in out.stdout and "demo" in out.stdout
    assert time.monotonic() - start < 5  # the 0.3 s target is measured in bench/


@pytest.mark.parametrize("args, needle", [
    (["run", "--task", "nope"], "unknown task"),
    (["run", "--agent", "nope"], "unknown agent"),
    (["run", "--agent", "cmd:"], "needs a command"),
    (["run", "--model", "./no/such/folder"], "unknown model"),
    (["run", "--budget", "0"], "budget must be positive"),
    (["run", "--budget", "-5m"], "duration"),
    (["run", "--budget", "soon"], "duration"),
    (["run", "--mode", "yolo"], "unknown mode"),
    (["run", "--agent-opt", "steps"], "not key=value"),
    (["run", "--task-opt", "n_heldout=0"], "bad options"),
    (["runs", "show", "no-such-run"], "no single run"),
])
def test_bad_input_is_explained(args: list[str], needle: str, tmp_path: Path) -> None:
    out = run_cli(*args, "--runs-dir", str(tmp_path)) if args[0] == "run" else run_cli(
        *args, "--runs-dir", str(tmp_path))
    assert out.returncode == 2, out.stderr
    assert needle in out.stderr and "fix:" in out.stderr
    assert "Traceback" not in out.stderr


def test_unreadable_model_folder(tmp_path: Path) -> None:
    bad = tmp_path / "model"
    bad.mkdir()
    (bad / "config.json").write_text("{}")
    out = run_cli("run", "--model", str(bad), "--runs-dir", str(tmp_path / "runs"))
    assert out.returncode == 2 and "model_type" in out.stderr and "fix:" in out.stderr


def test_port_in_use(tmp_path: Path, tiny_model: Path) -> None:
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    port = blocker.getsockname()[1]
    out = run_cli("run", "--model", str(tiny_model), "--task-opt", "n_heldout=4",
                  "--task-opt", "n_train=10", "--agent", "cmd:true", "--budget", "30",
                  "--port", str(port), "--runs-dir", str(tmp_path / "runs"))
    blocker.close()
    assert out.returncode == 2 and "already in use" in out.stderr
    # caught before anything heavy: no run folder (and no baseline) for a mistake
    assert not (tmp_path / "runs").exists()


def test_runs_list_and_show_empty(tmp_path: Path) -> None:
    out = run_cli("runs", "list", "--runs-dir", str(tmp_path))
    assert out.returncode == 0 and "no runs" in out.stdout


def test_rollout_writes_train_trajectories_and_reports_each_step(tmp_path: Path,
                                                                 tiny_model: Path) -> None:
    out = run_cli("rollout", "--task", "webshop", "--model", str(tiny_model), "--n", "2",
                  "--max-steps", "2", "--out", str(tmp_path / "r.jsonl"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "2 episodes" in out.stdout
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all('"task":"webshop"' in ln for ln in lines)
    assert "webshop: step 1/2, 2 of 2 episodes still running" in out.stderr
    quiet = run_cli("rollout", "--task", "webshop", "--model", str(tiny_model), "--n", "1",
                    "--max-steps", "1", "--out", str(tmp_path / "q.jsonl"), "--quiet",
                    cwd=tmp_path)
    assert quiet.returncode == 0 and "step 1/1" not in quiet.stderr


def test_rollout_refuses_a_static_task(tmp_path: Path, tiny_model: Path) -> None:
    out = run_cli("rollout", "--task", "gsm8k", "--model", str(tiny_model), cwd=tmp_path)
    assert out.returncode == 2 and "not interactive" in out.stderr and "fix:" in out.stderr


def test_rollout_bad_input_is_explained(tmp_path: Path, tiny_model: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"id": 1}\n')
    (tmp_path / "broken.jsonl").write_text("\n{not json\n")
    cases = [(["--model", str(tmp_path / "nope")], "does not exist"),
             (["--model", str(tmp_path)], "no config.json"),
             (["--model", str(tiny_model), "--episodes", str(tmp_path / "no.jsonl")],
              "cannot read the episode file"),
             (["--model", str(tiny_model), "--episodes", str(tmp_path / "bad.jsonl")],
              "bad.jsonl line 1 is not an episode"),
             (["--model", str(tiny_model), "--episodes", str(tmp_path / "broken.jsonl")],
              "broken.jsonl line 2 is not an episode")]
    for args, needle in cases:
        # a wide console: the message names long temporary paths and must not wrap
        out = run_cli("rollout", "--task", "webshop", *args, cwd=tmp_path,
                      env={"COLUMNS": "1000"})
        assert out.returncode == 2 and needle in out.stderr and "fix:" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
