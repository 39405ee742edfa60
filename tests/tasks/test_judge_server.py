"""The judge server behind `CodeExecutor.run_many`: every program's judge is a fork of one
trusted server per worker. A program that kills the server (possible only unsandboxed, where
it can see the server's process) fails itself and nothing else: the next program gets a new
server, and no verdict is lost or forged."""

from __future__ import annotations

import shutil

import pytest

from a2rl.tasks._lib.code_exec import CodeExecutor, TestedProgram

CONTEXT = 'def add(a, b):\n    "Add two numbers."\n'
TESTS = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"
GOOD = TestedProgram(CONTEXT, "    return a + b\n", TESTS, "add")
WRONG = TestedProgram(CONTEXT, "    return a - b\n", TESTS, "add")
# Finds every judge server it can see and SIGKILLs it (libc directly: the guard removes os.kill),
# then answers correctly: its own verdict must still not be "passed" unless a judge ran it.
KILLER = TestedProgram(CONTEXT, '''    import ctypes, os as _os
    libc = ctypes.CDLL(None)
    for pid in _os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"_a2rl_judge_server" in fh.read():
                    libc.kill(int(pid), 9)
        except (OSError, ValueError):
            pass
    return a + b
''', TESTS, "add")


@pytest.mark.parametrize("sandbox", ["none", "required"])
def test_a_program_killing_the_judge_server_fails_alone(sandbox: str) -> None:
    if sandbox == "required" and shutil.which("bwrap") is None:
        pytest.skip("bubblewrap missing")
    executor = CodeExecutor(sandbox=sandbox)  # type: ignore[arg-type]
    jobs = [GOOD, KILLER, GOOD, WRONG, KILLER, GOOD, GOOD]
    results = executor.run_many(jobs, workers=1)
    got = [r.status for r in results]
    # The good programs pass and the wrong one fails, before and after any kill.
    assert [got[i] for i in (0, 2, 5, 6)] == ["passed"] * 4, [r.output for r in results]
    assert got[3] == "failed"
    # A killer may pass (its judge was forked before the kill and answers for it) or fail (its
    # judge died with the server): never a crash, never a verdict of another program.
    assert all(s in ("passed", "failed") for s in got)


def test_run_many_spreads_jobs_over_workers_with_one_server_each() -> None:
    executor = CodeExecutor(sandbox="none")
    jobs = [GOOD, WRONG] * 6
    results = executor.run_many(jobs, workers=3)
    assert [r.status for r in results] == ["passed", "failed"] * 6
    assert "AssertionError" in results[1].output
