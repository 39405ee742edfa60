"""Adversarial pass four: records the agent can blind or bend with names and arguments.

- a file name git C-quotes (accents, quotes, backslashes, control or non-UTF-8 bytes) must not
  hide the agent's code from the analysis;
- an argument that looks like the end of strace's argv list (`'], '`) must not hide the
  arguments after it from the labeller and the audit (a real strace run).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from a2rl.recording import CodeRecorder, parse_exec_log, snapshot_files

HOSTILE_NAMES = ["données.py", 'quo"te.py', "back\\slash.py", "ctl\x01name.py", "tab\tname.py"]


def test_quoted_file_names_keep_their_code_in_the_snapshot(tmp_path: Path) -> None:
    run, ws = tmp_path / "run", tmp_path / "run" / "workspace"
    (ws / "code").mkdir(parents=True)
    for i, name in enumerate(HOSTILE_NAMES):
        (ws / "code" / name).write_text(f"import trl  # file {i}\n")
    raw = os.fsencode(ws / "code") + b"/latin1-\xe9.py"  # not UTF-8 at all
    with open(raw, "wb") as f:
        f.write(b"x = 1\n")
    CodeRecorder(run, ws).snapshot("t0001", 1.0)
    commit = json.loads((run / "code-history.jsonl").read_text().splitlines()[-1])["commit"]
    files = snapshot_files(run, commit)
    for i, name in enumerate(HOSTILE_NAMES):
        assert files[f"code/{name}"] == f"import trl  # file {i}\n"
    assert [v for k, v in files.items() if k.startswith("code/latin1-")] == ["x = 1\n"]


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_an_argument_shaped_like_the_end_of_argv_hides_nothing(tmp_path: Path) -> None:
    from a2rl.extensions.exec_trace import traced_command  # the tracer's own command line

    log = tmp_path / "exec.log"
    t0 = time.time()
    argv = ["/bin/echo", "probe", "], ", "--hidden", "data/x.jsonl", '"], "', "tail"]
    done = subprocess.run(traced_command(argv, strace=shutil.which("strace") or "", log=log),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    events = [e for e in parse_exec_log(log.read_text(), t0) if e.program == "/bin/echo"]
    assert [e.argv for e in events] == [argv]
