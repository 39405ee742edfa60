"""No copies that integrity does not need: the base model is mounted, not copied, into the
sandbox; a submission's snapshot is a copy-on-write clone on a file system that can make one.

The clone test runs on a loop-mounted XFS image made with reflink=1 (btrfs when XFS cannot be
made), so the used space it measures is the test's alone. It needs root, mkfs.xfs or mkfs.btrfs
and a kernel that mounts them, and skips saying which was missing. The figures at 1 GB are
bench/disk_copies.py's."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2rl._errors import A2RLError
from a2rl.grader import open_submission, snapshot_submission
from a2rl.models import resolve_model, weights_hash
from a2rl.sandbox import BIND_RECORD, Sandbox, bind_source, get_sandbox
from a2rl.tasks import get_task
from a2rl.workspace import build_workspace
from conftest import TINY_TASK

WEIGHTS_BYTES = 16 << 20


def _write_model(folder: Path, fill: bytes) -> None:
    """A checkpoint the snapshot checks accept: one safetensors file of WEIGHTS_BYTES (one U8
    tensor filled from `fill`), a config and a tokenizer file."""
    folder.mkdir(parents=True)
    header = json.dumps({"w": {"dtype": "U8", "shape": [WEIGHTS_BYTES],
                               "data_offsets": [0, WEIGHTS_BYTES]}}).encode()
    header += b" " * (-len(header) % 8)
    with (folder / "model.safetensors").open("wb") as fh:
        fh.write(len(header).to_bytes(8, "little") + header)
        fh.write((fill * (WEIGHTS_BYTES // len(fill) + 1))[:WEIGHTS_BYTES])
    (folder / "config.json").write_text('{"model_type": "llama"}')
    (folder / "tokenizer.json").write_text("{}")


def _used(path: Path) -> int:
    os.sync()
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def _mount_clone_fs(image: Path, mount: Path) -> str:
    """Make and mount a file system that clones (XFS with reflink, else btrfs); its name, or
    pytest.skip naming what this machine lacks."""
    if os.geteuid() != 0:
        pytest.skip("loop-mounting a file system image needs root")
    why: list[str] = []
    for kind, mkfs in (("xfs", ["mkfs.xfs", "-q", "-m", "reflink=1"]),
                       ("btrfs", ["mkfs.btrfs", "-q"])):
        if shutil.which(mkfs[0]) is None:
            why.append(f"{mkfs[0]} is not installed (apt-get install "
                       f"{'xfsprogs' if kind == 'xfs' else 'btrfs-progs'})")
            continue
        with image.open("wb") as fh:
            fh.truncate(320 << 20)  # sparse; XFS's smallest
        made = subprocess.run([*mkfs, str(image)], capture_output=True, text=True)
        mounted = made.returncode == 0 and subprocess.run(
            ["mount", "-o", "loop", str(image), str(mount)], capture_output=True,
            text=True).returncode == 0
        if mounted:
            return kind
        why.append(f"the kernel could not {'make' if made.returncode else 'mount'} a {kind} "
                   "image (loop devices or the file system missing)")
    pytest.skip("no file system with copy-on-write clones here: " + "; ".join(why))


@pytest.fixture
def clone_fs(tmp_path: Path) -> Iterator[Path]:
    image, mount = tmp_path / "fs.img", tmp_path / "mnt"
    mount.mkdir()
    _mount_clone_fs(image, mount)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def _snapshot(ws: Path, rel: str, artifacts: Path):  # type: ignore[no-untyped-def]
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with open_submission(rel, fd, ws) as (folder_fd, shown):
            return snapshot_submission(folder_fd, shown, artifacts, 1 << 30)
    finally:
        os.close(fd)


def test_three_snapshots_are_clones_the_agent_cannot_change(clone_fs: Path) -> None:
    """Three distinct submissions on a cloning file system: three snapshots that add < 1% of
    their size (clones share the agent's blocks), each still the bytes submitted after the
    agent rewrites its folder in place."""
    run_dir = clone_fs / "runs" / "arith" / "r1"
    ws = run_dir / "workspace"
    (ws / "output").mkdir(parents=True)
    (run_dir / "run.json").write_text("{}")
    for i in range(3):
        _write_model(ws / "output" / f"v{i}", bytes([i + 1]) * 4096 + os.urandom(4096))
    before = _used(clone_fs)
    snaps = [_snapshot(ws, f"output/v{i}", run_dir / "artifacts") for i in range(3)]
    added = _used(clone_fs) - before
    assert len({s.path for s in snaps}) == 3 and not any(s.reused for s in snaps)
    assert added < 0.01 * 3 * WEIGHTS_BYTES, f"{added} bytes for three snapshots"
    # the weights are stored once each, in the runs folder's store, read-only
    store = clone_fs / "runs" / ".blobs"
    assert (snaps[0].path / "model.safetensors").stat().st_ino in {
        p.stat().st_ino for p in store.iterdir()}
    # an identical submission is the same snapshot
    shutil.copytree(ws / "output" / "v1", ws / "output" / "v3")
    again = _snapshot(ws, "output/v3", run_dir / "artifacts")
    assert again.reused and again.path == snaps[1].path
    # the agent rewrites every submitted file in place: the clones keep what was submitted
    for i in range(3):
        with (ws / "output" / f"v{i}" / "model.safetensors").open("r+b") as fh:
            fh.seek(-WEIGHTS_BYTES, os.SEEK_END)
            fh.write(b"\xff" * WEIGHTS_BYTES)
    for s in snaps:
        assert weights_hash(s.path) == s.artifact_hash
        assert not (s.path / "model.safetensors").stat().st_mode & 0o222


def _bwrap() -> Sandbox:
    try:
        box = get_sandbox("bwrap")
        box.probe()
    except A2RLError as exc:
        pytest.skip(f"bwrap cannot start here: {exc.message}")
    return box


def test_no_base_copy_under_bwrap(tmp_path: Path, tiny_model: Path) -> None:
    """The workspace's model/ takes no bytes on the host (a bind point holding the record of
    its source), and the agent inside bwrap reads every byte of the model there."""
    from a2rl.capture import disk_bytes

    box = _bwrap()
    base = resolve_model(str(tiny_model))
    ws = build_workspace(tmp_path / "ws", task=get_task("arith", TINY_TASK), base=base,
                         mode="free", budget_s=60, description="d")
    assert [p.name for p in ws.model_dir.iterdir()] == [BIND_RECORD]
    assert disk_bytes(ws.model_dir) < 4096
    inside = ("import hashlib, json, os; print('SIZES ' + json.dumps({f: [os.path.getsize("
              "'model/' + f), hashlib.sha256(open('model/' + f, 'rb').read()).hexdigest()] "
              "for f in sorted(os.listdir('model'))}))")
    try:
        done = subprocess.run(box.wrap([sys.executable, "-c", inside], workspace=ws.root),
                              capture_output=True, text=True, timeout=120)
    finally:
        box.cleanup()
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("SIZES "))
    seen = json.loads(line[len("SIZES "):])
    expected = {p.name: [p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest()]
                for p in sorted(tiny_model.iterdir())}
    assert seen == expected


def test_unsandboxed_run_flags_a_changed_model_copy(tmp_path: Path, tiny_model: Path) -> None:
    """--sandbox none cannot mount: the agent gets a copy, compared with the base model at the
    close; a run whose agent changed it is flagged base_model_modified (an intact copy is not:
    test_task_and_workspace), and the model it was copied from is untouched."""
    from a2rl.runner import run
    from a2rl.schema import RunConfig

    source = {p.name: p.read_bytes() for p in tiny_model.iterdir()}
    edit = "chmod u+w model model/config.json && echo ' ' >> model/config.json"
    rec = run(RunConfig(task="arith", task_params=dict(TINY_TASK), model=str(tiny_model),
                        agent=f"cmd:{edit}", mode="free", budget_s=600, sandbox="none",
                        network="full", eval_timeout_s=600, grace_s=2, port=0,
                        runs_dir=str(tmp_path / "runs")))
    assert rec.agent_exit_code == 0
    assert "base_model_modified" in rec.flags and "unsandboxed" in rec.flags, rec.flags
    assert {p.name: p.read_bytes() for p in tiny_model.iterdir()} == source
    ws_model = tmp_path / "runs" / "arith" / rec.run_id / "workspace" / "model"
    assert (ws_model / "config.json").read_bytes() == source["config.json"] + b" \n"


@pytest.mark.parametrize("record", ["not json", '{"source": "relative/path"}', '{"source": 7}',
                                    '{"source": "/nonexistent-a2rl-source"}', "[]"])
def test_a_broken_bind_record_is_refused(tmp_path: Path, record: str) -> None:
    """A bind record is written by the harness; one that names no absolute, existing folder
    stops the launch with the fix, rather than mounting something else."""
    point = tmp_path / "model"
    point.mkdir()
    (point / BIND_RECORD).write_text(record)
    with pytest.raises(A2RLError, match="bind record") as info:
        bind_source(point)
    assert info.value.fix


def test_a_linked_bind_record_is_not_followed(tmp_path: Path) -> None:
    """A record that is a symbolic link (or a folder that is one) is no record: the folder is
    mounted as itself."""
    elsewhere = tmp_path / "record.json"
    elsewhere.write_text(json.dumps({"source": str(tmp_path)}))
    point = tmp_path / "model"
    point.mkdir()
    (point / BIND_RECORD).symlink_to(elsewhere)
    assert bind_source(point) == point
    (tmp_path / "linked").symlink_to(point)
    assert bind_source(tmp_path / "linked") == tmp_path / "linked"
