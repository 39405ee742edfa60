"""The live phase read is bounded against a hostile workspace, and the watch backs off when
reading is slow (the trace of a long run grows)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from a2rl.analysis import PhaseNow
from a2rl.analysis._live_phase import _MAX_BYTES, live_files
from a2rl.extensions.tracking._phase_watch import _DUTY, PhaseWatch


def test_live_files_reads_no_link_no_fifo_and_bounded_sizes(tmp_path: Path) -> None:
    ws = tmp_path / "workspace"
    (ws / "code").mkdir(parents=True)
    outside = tmp_path / "secret.py"
    outside.write_text("TOKEN = 'host secret'\n")
    (ws / "code" / "train.py").write_text("from trl import SFTTrainer\n")
    (ws / "code" / "link.py").symlink_to(outside)
    os.mkfifo(ws / "code" / "pipe.py")
    (ws / "code" / "big.json").write_bytes(b"x" * (_MAX_BYTES + 1))
    (ws / "linked_dir").symlink_to(tmp_path, target_is_directory=True)
    done: dict[str, str] = {}
    reader = threading.Thread(target=lambda: done.update(live_files(ws)), daemon=True)
    reader.start()
    reader.join(30)
    assert not reader.is_alive(), "live_files blocked on the FIFO"
    assert done == {"code/train.py": "from trl import SFTTrainer\n"}


def test_live_files_stops_at_the_total_cap(tmp_path: Path) -> None:
    ws = tmp_path / "workspace"
    ws.mkdir()
    for i in range(40):  # 40 MiB of scripts; the read stops at 32 MiB
        (ws / f"s{i:02d}.py").write_bytes(b"#" * _MAX_BYTES)
    files = live_files(ws)
    assert len(files) == 32
    assert sum(len(t) for t in files.values()) <= 32 * _MAX_BYTES


class _Tracker:
    def __init__(self) -> None:
        self.phases: list[str] = []

    def phase(self, now: PhaseNow) -> None:
        self.phases.append(now.phase)


class _SlowWatch(PhaseWatch):
    """A watch whose read takes `cost_s` and returns the phases of `script` in turn."""

    def __init__(self, cost_s: float, script: list[str], **kw: Any) -> None:
        super().__init__(**kw)
        self.cost_s, self.script, self.reads = cost_s, script, 0

    def _read(self) -> PhaseNow | None:
        time.sleep(self.cost_s)
        phase = self.script[min(self.reads, len(self.script) - 1)]
        self.reads += 1
        return PhaseNow(phase=phase, since_s=0.0, at_s=0.0)


def _watch(tmp_path: Path, cost_s: float, script: list[str], every_s: float) -> _SlowWatch:
    return _SlowWatch(cost_s, script, tracker=_Tracker(), run_dir=tmp_path, agent=None,
                      agent_dir=tmp_path, started_epoch=time.time(), traced=True, hide=(),
                      every_s=every_s, say=lambda _m: None)


def test_the_watch_logs_changes_only_and_backs_off_when_reading_is_slow(tmp_path: Path) -> None:
    watch = _watch(tmp_path, 0.05, ["SFT", "SFT", "eval", "eval"], every_s=0.01)
    for _ in range(4):
        watch.poll()
    assert watch.tracker.phases == ["SFT", "eval"]  # type: ignore[attr-defined]
    # a read of 0.05 s: the next read waits ≥ 0.05 / _DUTY (1 s), not every_s (0.01 s)
    assert watch._wait_s >= 0.05 / _DUTY
    fast = _watch(tmp_path, 0.0, ["SFT"], every_s=5.0)
    fast.poll()
    assert fast._wait_s == 5.0


def test_a_failing_read_is_said_once_and_the_watch_goes_on(tmp_path: Path) -> None:
    said: list[str] = []

    class _Broken(_SlowWatch):
        def _read(self) -> PhaseNow | None:
            self.reads += 1
            if self.reads < 3:
                raise OSError("trace unreadable")
            return PhaseNow(phase="SFT", since_s=0.0, at_s=0.0)

    watch = _Broken(0.0, ["SFT"], tracker=_Tracker(), run_dir=tmp_path, agent=None,
                    agent_dir=tmp_path, started_epoch=time.time(), traced=True, hide=(),
                    every_s=1.0, say=said.append)
    for _ in range(3):
        watch.poll()
    assert len(said) == 1 and "trace unreadable" in said[0]
    assert watch.tracker.phases == ["SFT"]  # type: ignore[attr-defined]


def test_the_growing_trace_is_parsed_once_and_as_the_whole_log_is(tmp_path: Path) -> None:
    """A real strace log of parallel programs (with calls strace split: `<unfinished ...>`),
    read piece by piece as it grows and in polls of bounded size, cut mid-line and
    mid-character: the same events as the whole log parsed at once, and a program still
    running has no end yet."""
    import random
    import shutil
    import subprocess

    from a2rl.capture import ExecLogReader, parse_exec_log
    from a2rl.extensions.exec_trace import traced_command

    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed")
    log = tmp_path / "exec.log"
    script = ("for i in $(seq 1 12); do (/bin/echo \"é$i\" >/dev/null; /bin/true) & done; "
              "wait; /bin/sleep 0.1")
    t0 = time.time()
    subprocess.run(traced_command(["bash", "-c", script], strace=strace, log=log),
                   check=True, timeout=120)
    data = log.read_bytes()
    whole = parse_exec_log(data.decode(errors="replace"), t0)
    assert sum(e.program == "/bin/echo" for e in whole) == 12
    growing = tmp_path / "growing.log"
    growing.write_bytes(b"")
    reader = ExecLogReader(t0)
    rng = random.Random(7)
    cut = 0
    while cut < len(data):
        step = rng.randint(1, 400)
        with growing.open("ab") as fh:
            fh.write(data[cut:cut + step])
        cut += step
        so_far = reader.poll(growing, max_bytes=rng.randint(1, 600))
        assert all(e.end_s is None or e.end_s >= e.start_s for e in so_far)
    reader.poll(growing)  # what the bounded polls left, in one read
    assert reader._offset == len(data)
    assert [e.model_dump() for e in reader.events(final=True)] == \
        [e.model_dump() for e in whole]
    # a program whose exit is not in the log yet is running: no end
    first_exit = data.index(b"+++ exited")
    partial = ExecLogReader(t0)
    partial.feed(data[:first_exit].decode(errors="replace").rsplit("\n", 1)[0])
    assert any(e.end_s is None for e in partial.events())
