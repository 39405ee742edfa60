"""Stopping the harness while a submission's evaluation is in flight: SIGTERM closes the run;
after SIGKILL, `a2rl runs repair` does. Apart from test_lifecycle.py (whose harness these tests
use) so that two test workers (`--dist loadfile`) share its minutes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable

import test_lifecycle
from test_lifecycle import SRC, Harness, _no_leftovers, _wait

pytestmark = test_lifecycle.pytestmark
harness = test_lifecycle.harness  # the fixture (it kills what a test leaves running)


def test_sigterm_with_an_evaluation_in_flight(harness: Callable[..., Harness]) -> None:
    h = harness(n_heldout=40)
    _wait("an evaluation in flight",
          lambda: any(r["status"] == "pending" for r in h.ledger()) and h.eval_children())
    h.stop(signal.SIGTERM)
    rec = h.record()
    assert rec is not None and rec.status == "failed" and rec.exit_reason == "terminated"
    assert rec.ended_at is not None and len(rec.submissions) == 1
    _no_leftovers(h.run_dir)


def test_repair_closes_a_run_whose_harness_was_killed(harness: Callable[..., Harness]) -> None:
    h = harness(n_heldout=40)
    _wait("an evaluation in flight",
          lambda: any(r["status"] == "pending" for r in h.ledger()) and h.eval_children())
    h.stop(signal.SIGKILL)
    rec = h.record()
    assert rec is not None and rec.status == "running" and rec.ended_at is None
    done = subprocess.run([sys.executable, "-m", "a2rl.cli", "runs", "repair", str(h.run_dir)],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(SRC), COLUMNS="200"))
    assert done.returncode == 0, done.stdout + done.stderr
    rec = h.record()
    assert rec is not None and rec.status == "failed" and rec.exit_reason == "harness_died"
    assert rec.repaired_at is not None and len(rec.submissions) == 1
    _no_leftovers(h.run_dir)
    again = subprocess.run([sys.executable, "-m", "a2rl.cli", "runs", "repair", str(h.run_dir)],
                           capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, PYTHONPATH=str(SRC), COLUMNS="200"))
    assert again.returncode == 2 and "already closed" in again.stderr
