"""The run's own storage fails (no inode, no byte, a read-only remount) or its close hangs: the
harness still closes run.json (status, end time, reason) and keeps every record written before.

Real small filesystems: tmpfs mounted with a byte and an inode limit (root only; skipped where
mounting is not permitted). The runs poll with generous timeouts; nothing asserts a duration
except that the harness exits by itself, well before the test's own kill."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from a2rl.capture import CodeRecorder, read_snapshots, storage_failure
from a2rl.capture._closing import INODE_RESERVE, RESERVE_NAME, RecordSlot
from a2rl.schema import RunRecord
from conftest import REPO, TINY_TASK

AGENTS = Path(__file__).parent.parent / "fixtures" / "agents"
SRC = REPO / "src"


def _mount(where: Path, *, size: str, inodes: int) -> None:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},nr_inodes={inodes}",
                           "tmpfs", str(where)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    mounted: list[Path] = []

    def make(size: str = "64m", inodes: int = 4096) -> Path:
        where = tmp_path / f"fs{len(mounted)}"
        _mount(where, size=size, inodes=inodes)
        mounted.append(where)
        return where

    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    yield make
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _wait(what: str, check: Callable[[], object], timeout: float = 1200) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


# -- the record slot on a real full / read-only filesystem --------------------------------------

def _fill_inodes(where: Path) -> int:
    n = 0
    try:
        while True:
            (where / f"f{n}").touch()
            n += 1
    except OSError:
        return n


def _fill_bytes(where: Path) -> None:
    with (where / "blob").open("wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\1" * 65536)
                fh.flush()
        except OSError:
            pass


@pytest.mark.parametrize("pad", [3000, 40_000])  # fits run.json's page / needs the reserve
@pytest.mark.parametrize("fill", [_fill_inodes, _fill_bytes])
def test_record_slot_closes_the_record_on_a_full_filesystem(
        small_fs: Callable[..., Path], fill: Callable[[Path], object], pad: int) -> None:
    fs = small_fs(size="2m", inodes=64)
    run_dir = fs / "arith" / "r1"
    run_dir.mkdir(parents=True)
    slot = RecordSlot(run_dir / "run.json")
    slot.write(json.dumps({"status": "running", "note": "x" * 100}))
    slot.reserve_space()
    assert (run_dir / RESERVE_NAME).stat().st_size > 0
    fill(fs)
    with pytest.raises(OSError):  # the filesystem is full: a plain atomic write fails
        (run_dir / ".probe").write_text("x" * 200_000)
    closed = {"status": "failed", "ended_at": "now", "error": "storage full", "pad": "y" * pad}
    slot.write(json.dumps(closed), final=True)
    assert json.loads((run_dir / "run.json").read_text()) == closed
    slot.write(json.dumps({"status": "running"}))  # sealed: nothing overwrites the close
    assert json.loads((run_dir / "run.json").read_text()) == closed
    slot.close()


def test_record_slot_refuses_a_read_only_remount_while_the_run_is_open(
        small_fs: Callable[..., Path]) -> None:
    fs = small_fs(size="2m", inodes=64)
    slot = RecordSlot(fs / "run.json")
    slot.write('{"status": "running"}')
    busy = subprocess.run(["mount", "-o", "remount,ro", str(fs)], capture_output=True, text=True)
    assert busy.returncode != 0  # the held record keeps the filesystem writable
    slot.write('{"status": "finished"}', final=True)
    slot.close()
    assert json.loads((fs / "run.json").read_text()) == {"status": "finished"}
    ro = subprocess.run(["mount", "-o", "remount,ro", str(fs)], capture_output=True, text=True)
    assert ro.returncode == 0, ro.stderr  # once closed, nothing holds it


def test_record_slot_writes_elsewhere_when_the_filesystem_is_read_only(
        small_fs: Callable[..., Path], a2rl_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fs = small_fs(size="2m", inodes=64)
    run_dir = fs / "arith" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text('{"status": "running"}')
    subprocess.run(["mount", "-o", "remount,ro", str(fs)], check=True)
    slot = RecordSlot(run_dir / "run.json")
    slot.write('{"status": "failed"}', final=True)
    assert slot.fallback is not None and slot.fallback.is_relative_to(a2rl_home)
    assert json.loads(slot.fallback.read_text()) == {"status": "failed"}
    assert "runs repair" in capsys.readouterr().err


# -- the code snapshot on a filesystem out of inodes ---------------------------------------------

def _snapshot_names(run_dir: Path, commit: str) -> list[str]:
    """The paths of a snapshot as the analysis lists them (`git ls-tree -z`)."""
    out = subprocess.run(["git", f"--git-dir={run_dir / 'code-history.git'}", "ls-tree", "-r", "-z",
                          "--name-only", commit], capture_output=True, check=True).stdout
    return [n for n in out.decode().split("\0") if n]


def _snapshot_text(run_dir: Path, commit: str, name: str) -> str:
    """One file of a snapshot as the analysis reads it (`git show commit:name`)."""
    return subprocess.run(["git", f"--git-dir={run_dir / 'code-history.git'}", "show",
                           f"{commit}:{name}"], capture_output=True, check=True, text=True).stdout


def test_a_snapshot_of_more_files_than_free_inodes_is_taken(small_fs: Callable[..., Path]) -> None:
    """The workspace holds hundreds of files and the filesystem 8 free inodes: the snapshot is
    one pack, taken in full, and the analysis's readers see every file."""
    fs = small_fs(size="16m", inodes=600)
    run_dir, workspace = fs / "run", fs / "run" / "workspace"
    (workspace / "code").mkdir(parents=True)
    (workspace / "code" / "train.py").write_text("from trl import SFTTrainer\n")
    recorder = CodeRecorder(run_dir, workspace)
    recorder.snapshot("s0001", 1.0)
    filled = _fill_inodes(workspace / "code")
    for n in range(8):  # what the harness holds back for its closing steps, in small
        (workspace / "code" / f"f{n}").unlink()
    assert filled > 400 and os.statvfs(fs).f_ffree <= 8
    snap = recorder.snapshot("final", 2.0)
    names = _snapshot_names(run_dir, snap.commit)
    last = f"code/f{filled - 1}"
    assert snap.files == filled - 8 + 1 == len(names) - 1  # all but LARGE_FILES.json
    assert last in names and last in snap.changed and "code/f0" not in names
    assert _snapshot_text(run_dir, snap.commit, "code/train.py") == "from trl import SFTTrainer\n"
    assert _snapshot_text(run_dir, snap.commit, last) == ""
    assert [s.tag for s in read_snapshots(run_dir)] == ["s0001", "final"]
    _fill_inodes(workspace)  # not one inode left: the failure is the storage's, as the recorder
    with pytest.raises(OSError) as refused:  # reports it (no git traceback)
        recorder.snapshot("t0001", 3.0)
    assert storage_failure(refused.value), refused.value
    assert [s.tag for s in read_snapshots(run_dir)] == ["s0001", "final"]


# -- whole runs -------------------------------------------------------------------------------

def _agent(script: str, *args: str) -> str:
    blob = base64.b64encode((AGENTS / script).read_bytes()).decode()
    return (f"cmd:echo {blob} | base64 -d > agent.py && python agent.py "
            + " ".join(args))


class Harness:
    def __init__(self, runs: Path, model: Path, home: Path, agent: str, log: Path,
                 budget: int = 600) -> None:
        self.runs = runs
        argv = [sys.executable, "-m", "a2rl.cli", "run", "--task", "arith", "--agent", agent,
                "--model", str(model), "--budget", str(budget), "--eval-timeout", "600",
                "--grace", "2", "--runs-dir", str(runs)]
        for k, v in TINY_TASK.items():
            argv += ["--task-opt", f"{k}={v}"]
        env = dict(os.environ, A2RL_HOME=str(home),
                   PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
        self.log_path = log
        self.log = log.open("wb")
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

    def wait(self, timeout: float = 1200) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.log.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def harness(tmp_path: Path, tiny_model: Path, a2rl_home: Path) -> Iterator[Callable[..., Harness]]:
    started: list[Harness] = []

    def make(runs: Path, agent: str, **kw: int) -> Harness:
        h = Harness(runs, tiny_model, a2rl_home, agent, tmp_path / f"h{len(started)}.log", **kw)
        started.append(h)
        return h

    yield make
    for h in started:
        h.kill()


@pytest.mark.parametrize("what", ["inodes", "bytes"])
def test_a_run_whose_storage_fills_up_still_closes_its_record(
        small_fs: Callable[..., Path], harness: Callable[..., Harness], what: str) -> None:
    fs = small_fs(size="96m", inodes=2048)
    h = harness(fs / "runs", _agent("storage_agent.py", what))
    code = h.wait()
    rec = h.record()
    log = h.log_path.read_text(errors="replace")
    assert rec is not None, log
    assert rec.status in ("finished", "failed") and rec.ended_at is not None, log
    assert rec.exit_reason is not None and rec.agent_started_at is not None
    if rec.status == "failed":
        assert rec.error, "a failed close names its reason"
    else:
        assert code == 0, log
    assert rec.baseline is not None  # recorded before the storage filled up
    assert json.loads((h.run_dir / "baseline.json").read_text())["score"] == rec.baseline.score
    if what == "inodes":  # bytes are left for the agent's last line
        assert f"FILLED {what}" in (h.run_dir / "agent" / "transcript.log").read_text()
    else:
        assert (h.run_dir / "workspace" / "fill" / "blob").stat().st_size > 1 << 20


@pytest.mark.parametrize("signals", [1, 2])
def test_sigterm_while_the_close_is_stuck_closes_the_record(
        small_fs: Callable[..., Path], signals: int) -> None:
    """The close blocks for good (a read of a FIFO no one writes, what a special file in a
    submission did to the evaluation worker) while an evaluation child of the run is alive in
    its own session. SIGTERM kills the child's group at once; the close is abandoned after the
    grace (a second SIGTERM: at once) and run.json is written closed, with the reason."""
    from a2rl.capture._closing import bounded_close
    from a2rl.runner._lifecycle import kill_leftover_groups, terminate_on_signals

    fs = small_fs(size="8m", inodes=256)
    run_dir = fs / "arith" / "r1"
    (run_dir / "evals").mkdir(parents=True)
    slot = RecordSlot(run_dir / "run.json")
    slot.write(json.dumps({"status": "running"}))
    slot.reserve_space()
    fifo = run_dir / "evals" / "shard"
    os.mkfifo(fifo)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                             cwd=run_dir / "evals", start_new_session=True)
    stuck = threading.Event()

    def work() -> None:  # the close: blocks in open() until a writer comes (none does)
        stuck.set()
        fifo.open("rb").close()
        slot.write(json.dumps({"status": "finished"}), final=True)

    def abandon(reason: str) -> None:
        slot.seal(json.dumps({"status": "failed", "ended_at": "now", "error": reason}))

    def sender() -> None:
        stuck.wait(30)
        for _ in range(signals):
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=sender, daemon=True).start()
    t0 = time.monotonic()
    try:
        with terminate_on_signals():  # the harness's handler; the close installs its own
            ended = bounded_close(work, deadline_s=600, grace_s=60 if signals == 2 else 3,
                                  on_signal=lambda: kill_leftover_groups([run_dir]),
                                  on_abandon=abandon)
        took = time.monotonic() - t0
        assert not ended and took < 300  # far below the 600 s deadline: the signal cut it short
        assert child.wait(timeout=60) == -signal.SIGKILL  # the evaluation child's group died
        rec = json.loads((run_dir / "run.json").read_text())
        assert rec["status"] == "failed" and rec["ended_at"] == "now"
        assert "SIGTERM" in rec["error"] and f"{signals} signal(s)" in rec["error"]
        assert not (run_dir / RESERVE_NAME).exists()
    finally:
        child.kill()
        child.wait()
        with contextlib.suppress(OSError):  # let the abandoned thread's open() return
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        slot.close()


def test_out_of_inodes_the_agent_s_last_records_are_still_written(
        small_fs: Callable[..., Path], harness: Callable[..., Harness]) -> None:
    """The agent takes every inode of the filesystem its run lies on. Once it is gone the
    harness gives the inodes it held back to the closing steps: the exec trace, the last code
    snapshot and the analysis are written and the run closes as the agent ended it. The
    snapshot is one pack whatever the number of files (here over a thousand, more than the
    inodes held back), and it holds them all."""
    fs = small_fs(size="96m", inodes=2048)
    h = harness(fs / "runs", _agent("storage_agent.py", "inodes"))
    code = h.wait()
    rec = h.record()
    log = h.log_path.read_text(errors="replace")
    assert rec is not None and code == 0, log
    assert rec.status == "finished" and rec.exit_reason == "agent_exited", (rec.error, log)
    assert "Traceback" not in log
    run_dir = h.run_dir
    assert "FILLED inodes" in (run_dir / "agent" / "transcript.log").read_text()
    if rec.exec_traced:  # strace present and able to follow the sandbox
        execs = [json.loads(x) for x in (run_dir / "agent" / "exec.jsonl").read_text().splitlines()]
        assert any("agent.py" in e["argv"] for e in execs), execs
    final = [s for s in read_snapshots(run_dir) if s.tag == "final"]
    assert len(final) == 1 and "code snapshot" not in (rec.error or ""), (final, rec.error)
    names = _snapshot_names(run_dir, final[0].commit)
    assert len([n for n in names if n.startswith("fill/")]) > INODE_RESERVE
    assert final[0].files == len(names) - 1  # all but LARGE_FILES.json
    assert _snapshot_text(run_dir, final[0].commit, "agent.py") == \
        (run_dir / "workspace" / "agent.py").read_text()
    assert (run_dir / "analysis.json").is_file() and (run_dir / "summary.md").is_file()
    assert not (run_dir / ".closing-inodes").exists()
