"""Stopping the harness at each phase: SIGTERM/SIGHUP close run.json from the ledger and leave
no process of the run behind; after a SIGKILL, `a2rl runs repair` does the same.

a2rl runs as a real CLI process; the tests poll for each state with generous timeouts (no
assertion on how long anything takes)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from a2rl.schema import RunRecord
from conftest import REPO, TINY_TASK

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")
AGENTS = Path(__file__).parent.parent / "fixtures" / "agents"
SRC = Path(__file__).resolve().parent.parent.parent / "src"


def _agent() -> str:
    blob = base64.b64encode((AGENTS / "lifecycle_agent.py").read_bytes()).decode()
    return f"cmd:mkdir -p code && echo {blob} | base64 -d > code/a.py && python code/a.py"


def _wait(what: str, check: Callable[[], object], timeout: float = 1800) -> object:
    # generous: a starved machine took 412 s to set a run up (no assertion on durations)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _pids_mentioning(path: Path) -> list[int]:
    needle = str(path).encode()
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
            with open(f"/proc/{entry}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue  # a zombie is dead already (its parent has not reaped it yet)
        except OSError:
            continue
        if needle in cmd:
            out.append(int(entry))
    return out


class Harness:
    def __init__(self, root: Path, model: Path, home: Path, n_heldout: int = 6) -> None:
        self.runs = root / "runs"
        params = dict(TINY_TASK, n_heldout=n_heldout)
        argv = [sys.executable, "-m", "a2rl.cli", "run", "--task", "arith", "--agent", _agent(),
                "--model", str(model), "--budget", "600", "--eval-timeout", "600", "--grace",
                "2", "--runs-dir", str(self.runs)]
        for k, v in params.items():
            argv += ["--task-opt", f"{k}={v}"]
        env = dict(os.environ, A2RL_HOME=str(home),
                   PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
        self.log = (root / "harness.log").open("wb")
        self.proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=REPO)

    @property
    def run_dir(self) -> Path:
        found = _wait("the run directory", lambda: sorted(self.runs.glob("arith/*/run.json")))
        return found[0].parent  # type: ignore[index]

    def record(self) -> RunRecord | None:
        try:
            return RunRecord.model_validate_json((self.run_dir / "run.json").read_text())
        except (OSError, ValueError):
            return None

    def ledger(self) -> list[dict]:
        path = self.run_dir / "ledger.jsonl"
        if not path.exists():
            return []
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]

    def eval_children(self) -> list[int]:
        """Evaluation children: their command line names no path, their log is in evals/."""
        needle = str(self.run_dir / "evals") + "/"
        out = []
        for entry in os.listdir("/proc"):
            try:
                fds = [os.readlink(f"/proc/{entry}/fd/{fd}") for fd in os.listdir(f"/proc/{entry}/fd")]
            except OSError:
                continue
            if any(t.startswith(needle) for t in fds):
                out.append(int(entry))
        return out

    def stop(self, sig: int) -> int:
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=300)
        finally:
            self.log.close()


@pytest.fixture
def harness(tmp_path: Path, tiny_model: Path, a2rl_home: Path) -> Iterator[Callable[..., Harness]]:
    started: list[Harness] = []

    def make(**kw: int) -> Harness:
        h = Harness(tmp_path, tiny_model, a2rl_home, **kw)
        started.append(h)
        return h

    yield make
    for h in started:
        if h.proc.poll() is None:
            h.proc.kill()
            h.proc.wait()
        for pid in _pids_mentioning(tmp_path / "runs"):
            try:
                os.killpg(os.getpgid(pid), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _no_leftovers(run_dir: Path) -> None:
    from a2rl.runner._lifecycle import _processes_of

    _wait("the run's processes to be gone", lambda: not _pids_mentioning(run_dir)
          and not _processes_of(run_dir), timeout=60)


def test_sigterm_during_the_baseline_closes_the_run(harness: Callable[..., Harness]) -> None:
    h = harness()
    _wait("the baseline evaluation child",
          lambda: (r := h.record()) and r.status == "setting_up" and h.eval_children())
    h.stop(signal.SIGTERM)
    rec = h.record()
    assert rec is not None and rec.status == "failed" and rec.exit_reason == "terminated"
    assert rec.ended_at is not None and "SIGTERM" in (rec.error or "")
    assert rec.agent_started_at is None and rec.submissions == []
    _no_leftovers(h.run_dir)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_each_handled_signal_stops_the_run_like_ctrl_c(sig: int) -> None:
    """In-process: SIGTERM and SIGHUP raise the same HarnessTerminated, named by the signal
    (run.json's error), which closes the run as below."""
    from a2rl.runner._lifecycle import terminate_on_signals
    from a2rl.runner._supervise import HarnessTerminated

    before = signal.getsignal(sig)
    with pytest.raises(HarnessTerminated) as caught, terminate_on_signals():
        os.kill(os.getpid(), sig)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the handler runs between bytecodes, at once
            time.sleep(0.01)
    assert caught.value.signum == sig and str(caught.value) == signal.Signals(sig).name
    assert signal.getsignal(sig) == before  # the harness's handler is gone again


# SIGHUP takes SIGTERM's handler (above) and the same path through the run: its full run is in
# `make test-extended`.
@pytest.mark.parametrize("sig", [signal.SIGTERM,
                                 pytest.param(signal.SIGHUP, marks=pytest.mark.extended)])
def test_signal_in_the_agent_phase_keeps_the_scored_submission(
        harness: Callable[..., Harness], sig: int) -> None:
    h = harness()
    _wait("a scored submission", lambda: any(r["status"] == "scored" for r in h.ledger()))
    h.stop(sig)
    rec = h.record()
    assert rec is not None and rec.status == "failed" and rec.exit_reason == "terminated"
    assert signal.Signals(sig).name in (rec.error or "")
    assert [s.status for s in rec.submissions] == ["scored"]
    assert rec.best is not None and rec.best.submission_id == rec.submissions[0].id
    assert rec.improvement is not None and rec.timings.agent_s > 0
    assert "AGENT-WORKING" in (h.run_dir / "agent" / "transcript.log").read_text()
    _no_leftovers(h.run_dir)


def test_repair_removes_a_podman_container_that_outlived_the_harness(
        tmp_path: Path, tiny_model: Path) -> None:
    """A podman container is conmon's child, not the harness's: killing the harness (and the
    podman client with it) leaves it running until `repair` removes it."""
    import datetime as dt

    from a2rl._errors import A2RLError
    from a2rl.runner._lifecycle import repair_run
    from a2rl.sandbox.backends.podman import PodmanSandbox
    from a2rl.schema import RunConfig

    box = PodmanSandbox()
    try:
        box.probe()
    except A2RLError as exc:
        pytest.skip(f"podman cannot start here: {exc.message}")
    run_dir = tmp_path / "runs" / "arith" / "r1"
    ws = run_dir / "workspace"
    ws.mkdir(parents=True)
    client = subprocess.Popen(box.wrap(["sleep", "600"], workspace=ws, env={"PATH": "/usr/bin"}),
                              env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)

    def running() -> bool:
        names = subprocess.run(["podman", *(box.global_options or ()), "ps", "--format",
                                "{{.Names}}"], capture_output=True, text=True).stdout.split()
        return box.name in names

    _wait("the container", running, timeout=120)
    client.kill()
    client.wait()
    assert running()  # the harness's death did not stop it
    config = RunConfig(task="arith", agent="cmd:x", model=str(tiny_model), mode="free",
                       budget_s=60, sandbox="podman", eval_timeout_s=60, grace_s=1, port=0,
                       runs_dir=str(tmp_path / "runs"))
    rec = RunRecord(run_id="r1", status="running", created_at=dt.datetime.now(dt.UTC),
                    config=config, versions={}, sandboxed=True)
    (run_dir / "run.json").write_text(rec.model_dump_json())
    (run_dir / "sandbox.json").write_text(json.dumps({"backend": "podman",
                                                      "container": box.name}))
    try:
        repaired, _ = repair_run(run_dir)
        assert repaired.exit_reason == "harness_died" and repaired.ended_at is not None
        assert not running()
    finally:
        box.cleanup()


def test_the_cleanup_after_a_run_spares_a_process_kept_for_every_run(tmp_path: Path) -> None:
    """A service serving every run of the process (W&B's) holds a file in the run folder: the
    cleanup kills the run's other leftovers, never it."""
    from a2rl._util import keep_process
    from a2rl.runner._lifecycle import kill_leftover_groups

    run_dir = tmp_path / "arith" / "r1"
    run_dir.mkdir(parents=True)
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    kept = subprocess.Popen(sleeper, cwd=run_dir)
    leftover = subprocess.Popen(sleeper, cwd=run_dir)
    try:
        keep_process(kept.pid)
        hit = kill_leftover_groups([run_dir])
        assert leftover.pid in hit and kept.pid not in hit
        assert leftover.wait(timeout=60) == -9
        assert kept.poll() is None
    finally:
        for p in (kept, leftover):
            p.kill()
            p.wait()
