"""Code snapshots are streamed into `git fast-import`: each is one pack, and any file name the
agent picks (quotes, backslashes, newlines, bytes that are not UTF-8, a leading quote) comes
back through the readers the analysis uses, as do links (as links) and large files (listed)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from a2rl.capture import CodeRecorder, read_snapshots, snapshot_files

NAMES = [b'say "hi".py', b"back\\slash.py", b"new\nline.py", b'"quoted.py', b"caf\xe9.py",
         b"tab\there.py", "données.py".encode()]


def _ls(git_dir: Path, commit: str) -> list[bytes]:
    out = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", "--name-only", commit],
                         capture_output=True, check=True).stdout
    return [n for n in out.split(b"\0") if n]


def test_hostile_names_links_and_large_files_round_trip(tmp_path: Path) -> None:
    ws, run = tmp_path / "ws", tmp_path / "run"
    (ws / "code").mkdir(parents=True)
    for i, name in enumerate(NAMES):
        with open(os.path.join(os.fsencode(ws / "code"), name), "wb") as fh:
            fh.write(f"v = {i}\n".encode())
    os.symlink("/etc/passwd", ws / "code" / "link")
    (ws / "weights.bin").write_bytes(b"\0" * 3000)
    (ws / "code" / ".git").write_text("not a repository\n")  # git keeps no such entry
    recorder = CodeRecorder(run, ws, max_file_bytes=1000)
    first = recorder.snapshot("s0001", 10.0)
    git_dir = run / "code-history.git"
    listed = _ls(git_dir, first.commit)
    assert sorted(listed) == sorted([b"code/" + n for n in NAMES] + [b"code/link", b"LARGE_FILES.json"])
    assert first.files == len(NAMES) + 2  # the link and the large file count, .git does not
    files = snapshot_files(run, first.commit)
    assert files["code/new\nline.py"] == "v = 2\n" and files["code/caf\ufffd.py"] == "v = 4\n"
    assert files["code/données.py"] == "v = 6\n" and files["code/link"] == "/etc/passwd"
    assert [f["path"] for f in json.loads(files["LARGE_FILES.json"])] == ["weights.bin"]
    assert sorted(first.changed) == sorted(n for n in files if n != "LARGE_FILES.json")
    mode = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", first.commit, "code/link"],
                          capture_output=True, text=True, check=True).stdout
    assert mode.startswith("120000 ")  # recorded as a link, never followed

    (ws / "code" / "say \"hi\".py").write_text("v = 'changed'\n")
    (ws / "code" / "tab\there.py").unlink()
    second = recorder.snapshot("final", 20.0)
    assert sorted(second.changed) == ['code/say "hi".py', "code/tab\there.py"]
    assert snapshot_files(run, second.commit)['code/say "hi".py'] == "v = 'changed'\n"
    assert [s.tag for s in read_snapshots(run)] == ["s0001", "final"]
    packs = sorted(p.suffix for p in (git_dir / "objects" / "pack").iterdir())
    assert packs.count(".pack") == 2 and not [p for p in (git_dir / "objects").iterdir()
                                              if p.name not in ("pack", "info")]
    parent = subprocess.run(["git", f"--git-dir={git_dir}", "rev-parse", f"{second.commit}^"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert parent == first.commit
