"""a2rl._walk against what an agent can build: folders deeper than Python's recursion limit, a
folder swapped for a link to a host folder while the walk runs, unreadable folders."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from a2rl._walk import WalkStats, fwalk, read_text_files, rmtree


def _deep(root: Path, levels: int) -> Path:
    """`root/d/d/…/d` (`levels` folders) with a file at the bottom, built with relative opens
    (a path that long is beyond PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        with open(os.open("bottom.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("x = 1\n")
    finally:
        os.close(fd)
    return root


def test_a_folder_deeper_than_the_recursion_limit_is_walked_to_the_cap_and_said(
        tmp_path: Path) -> None:
    root = tmp_path / "code"
    root.mkdir()
    (root / "train.py").write_text("import trl\n")
    _deep(root, 1100)
    try:
        stats = WalkStats()
        folders = [f for f, _d, _f, _fd in fwalk(root, stats=stats)]
        assert folders[0] == "." and len(folders) == 129  # the root and 128 levels
        assert stats.too_deep == ["/".join(["d"] * 129)] and not stats.complete
        assert list(read_text_files(root, accept=lambda rel: True, max_bytes=1 << 20)) == \
            ["train.py"]
    finally:
        rmtree(root)  # pytest's own clean-up recurses and would fail on it


def test_rmtree_removes_any_depth_with_few_descriptors(tmp_path: Path) -> None:
    root = tmp_path / "run"
    root.mkdir()
    _deep(root, 1100)
    (root / "link").symlink_to(tmp_path / "keep")
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "precious.txt").write_text("keep me\n")
    locked = root / "locked"
    locked.mkdir()
    (locked / "f").write_text("x")
    locked.chmod(0)
    before = len(os.listdir("/proc/self/fd"))
    rmtree(root)
    assert not root.exists() and sorted(os.listdir(tmp_path)) == ["keep"]
    assert (tmp_path / "keep" / "precious.txt").read_text() == "keep me\n"  # links not followed
    assert len(os.listdir("/proc/self/fd")) == before
    rmtree(root)  # already gone: nothing to do


def test_a_folder_swapped_for_a_host_link_mid_walk_is_never_entered(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_text("HOST\n")
    ws = tmp_path / "ws"
    (ws / "data").mkdir(parents=True)
    for i in range(50):
        (ws / "data" / f"f{i}.jsonl").write_text("{}\n")
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            try:
                os.rename(ws / "data", ws / "data.real")
                os.symlink(host, ws / "data")
                stop.wait(0.002)
                os.unlink(ws / "data")
                os.rename(ws / "data.real", ws / "data")
            except OSError:
                pass

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        seen: set[str] = set()
        for _ in range(200):
            for folder, _dirs, files, _fd in fwalk(ws):
                seen.update(f"{folder}/{name}" for name in files)
            seen.update(read_text_files(ws, accept=lambda rel: True, max_bytes=1 << 20))
    finally:
        stop.set()
        swapper.join()
    assert not any("secret" in s for s in seen)
