"""aime2025: pass@k, lm-eval's aime25 verdicts (against the installed lm-eval), the task's data
(hub loading with a stand-in for `datasets`, the offline set) and a tiny evaluation."""

from __future__ import annotations

import importlib.util
import itertools
import json
import random
from math import comb
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

try:
    import lm_eval
except ImportError as exc:  # a collection error that names the fix, not a silent skip
    raise ImportError(f"{exc}: the reference comparison needs lm-eval; install the test extra "
                      "(pip install -e '.[test]')") from exc

from a2rl._errors import A2RLError
from a2rl.tasks import get_task
from a2rl.tasks._core.offline import Prediction
from a2rl.tasks.aime2025.scoring import (
    LM_EVAL_VERSION,
    extract_answer,
    lm_eval_correct,
    pass_at_k,
)
from a2rl.tasks.aime2025.task import HUB_DATASETS, HUB_TRAIN, AIME2025Task


def _reference() -> ModuleType:
    """lm-eval's aime utils.py, loaded from the installed package by path (its tasks package
    would build the whole task index on import)."""
    path = Path(lm_eval.__file__).parent / "tasks" / "aime" / "utils.py"
    spec = importlib.util.spec_from_file_location("lm_eval_aime_utils", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REF = _reference()


def test_reference_is_the_pinned_lm_eval_and_its_aime25_reads_math_ai() -> None:
    import yaml

    assert importlib.metadata.version("lm-eval") == LM_EVAL_VERSION
    cfg = yaml.safe_load((Path(REF.__file__).parent / "aime25.yaml").read_text()
                         .replace("!function", ""))
    assert cfg["dataset_path"] in HUB_DATASETS and cfg["test_split"] == HUB_DATASETS[
        cfg["dataset_path"]]
    aime = yaml.safe_load((Path(REF.__file__).parent / "aime.yaml").read_text()
                          .replace("!function", ""))
    assert (aime["dataset_path"], aime["test_split"]) == HUB_TRAIN


# ---- pass@k ------------------------------------------------------------------------------------
def _brute_force(n: int, c: int, k: int) -> float:
    """The fraction of k-subsets of the n samples that hold at least one correct sample."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 10])
def test_pass_at_k_equals_the_formula_and_brute_force(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            formula = 1 - comb(n - c, k) / comb(n, k)
            assert pass_at_k(n, c, k) == pytest.approx(formula, abs=1e-12)
            assert pass_at_k(n, c, k) == pytest.approx(_brute_force(n, c, k), abs=1e-12)


def test_pass_at_k_edges_and_bad_input() -> None:
    assert pass_at_k(8, 0, 8) == 0.0 and pass_at_k(8, 1, 8) == 1.0
    assert pass_at_k(8, 2, 1) == 0.25
    assert pass_at_k(200, 3, 100) == pytest.approx(1 - comb(197, 100) / comb(200, 100))
    for bad in [(8, 9, 1), (8, -1, 1), (8, 2, 0), (8, 2, 9)]:
        with pytest.raises(ValueError):
            pass_at_k(*bad)


# ---- verdicts against lm-eval ------------------------------------------------------------------
ANSWERS = ["70", "0", "5", "204", "999", "1", "12"]
TEMPLATES = [
    "{a}", " {a} ", "{a}.", "0{a}", "{a}.0", "The answer is {a}.", "\\boxed{{{a}}}",
    "so \\boxed{{{a}}}.", "\\boxed{{ {a} }}", "\\boxed {a}", "\\boxed {a}$ done", "$\\boxed{{{a}}}$",
    "$x = {a}$", "$x={a}$", "$abc = {a}$", "$\\$ {a}$", "\\fbox{{{a}}}", "$\\fbox{{{a}}}$",
    "\\boxed{{{a}}} and \\boxed{{7}}", "\\boxed{{7}} then \\boxed{{{a}}}", "\\boxed{{\\{a}}}",
    "\\boxed{{{a}", "\\boxed}}{{{a}}}", "\\boxed{{{{{a}}}}}", "\\boxed{{\\text{{{a}}}}}",
    "$\\boxed{{{a}}}$ and $1$", "$1$ and $2$ {a}", "$ {a} $", "${a}$$", "$$ {a} $$", "{a}$",
    "\\boxed{{{a}^\\circ}}", "\\boxed{{{a}^{{\\circ}}}}", "\\boxed{{{a}\\%}}", "\\boxed{{{a}\\!}}",
    "\\boxed{{\\left({a}\\right)}}", "\\boxed{{{a}\\text{{ apples}}}}",
    "\\boxed{{{a}\\text{{ a}}\\text{{ b}}}}", "\\boxed{{\\frac{a}2}}", "\\boxed{{\\dfrac{{{a}}}{{1}}}}",
    "\\boxed{{{a}/1}}", "\\boxed{{ {a}/2 }}", "\\boxed{{a/{a}}}", "\\boxed{{\\sqrt{a}}}",
    "\\boxed{{{a}\\sqrt}}", "\\boxed{{{a}\\frac}}", "\\boxed{{{a}\\frac1}}", "\\boxed{{.{a}}}",
    "\\boxed{{{a}\n}}", "\\boxed{{{a}\\\\}}", "\\boxed{{0.5}}", "\\boxed{{1/2}}", "\\boxed{{k={a}}}",
    "\\boxed{{n = {a}}}", "\\boxed{{long = {a}}}", "\\boxed{{{a}={a}}}", "\\boxed{{ {a} , }}",
    "\\boxed{{{a},000}}", "\\boxed{{\\textbf{{{a}}}}}", "\\boxed{{٣}}", "\\boxed{{{a}/٣}}",
    "\\boxed{{1_0/2}}", "$\\frac{{{a}}}{{1}}$", "\\boxed{{\\tfrac{a}{{1}}}}", "\\(\\boxed{{{a}}}\\)",
    "**{a}**", "Final answer: {a}", "", "$", "$$", "\\boxed{{}}", "\\boxed", "\\fbox",
    "\\boxed{{{a}}}}}", "}}\\boxed{{{a}}}", "\\boxed{{{a}}} $ \\boxed {a}",
]
REFERENCES = [*ANSWERS, "\\frac{1}{2}", "1/2", "0.5", "x = 5", "\\frac{70}{1}", "\\sqrt{5}",
              "70\\text{ apples}", "\\$70", ".5", "", "٣", "1_0/2"]


def _adversarial_cases() -> list[tuple[str, str]]:
    cases = [(t.format(a=a), ref) for t in TEMPLATES for a in ANSWERS[:3] for ref in ANSWERS[:3]]
    cases += [(t.format(a=a), ref) for t in TEMPLATES for a in ("5", "1") for ref in REFERENCES]
    rng = random.Random(7)
    pieces = ["\\boxed{", "}", "{", "$", "\\fbox{", "\\boxed ", "70", "5", " ", "\\frac", "/",
              "=", "\\sqrt", ".", "\\text{ ", "\n", "x", "\\!", "\\left", "0"]
    for _ in range(600):  # random splices of the constructs the rules react to
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        cases.append((text, rng.choice(REFERENCES)))
    return cases


def test_verdicts_agree_with_lm_eval_on_adversarial_completions() -> None:
    cases = _adversarial_cases()
    assert len(cases) > 1500
    mismatches = [(c, r) for c, r in cases
                  if lm_eval_correct(c, r) != bool(REF.process_results({"answer": r}, [c])
                                                   ["exact_match"])]
    assert not mismatches, mismatches[:10]
    # the set is not trivial: both verdicts occur often
    rights = sum(lm_eval_correct(c, r) for c, r in cases)
    assert 100 < rights < len(cases) - 100


def test_extraction_on_hand_picked_completions() -> None:
    assert extract_answer("so it is \\boxed{70}.") == "70"
    assert extract_answer("first \\boxed{3}, finally \\boxed{70}") == "70"
    assert extract_answer("we get $x=70$ here") == "x=70"
    assert lm_eval_correct("we get $x=70$ here", "70")  # "x=" dropped by the normaliser
    assert not lm_eval_correct("The answer is 70.", "70")  # no box, no $...$: whole text
    assert not lm_eval_correct("\\boxed{070}", "70") and lm_eval_correct("\\boxed{ 70 }", "70")
    assert extract_answer("\\fbox{70}") == "\\fbox{70}"  # found, but not unboxed (reference)


# ---- the task ----------------------------------------------------------------------------------
def test_registered_with_pass_at_8_defaults() -> None:
    task = get_task("aime2025")
    assert isinstance(task, AIME2025Task) and task.params.source == "hub"
    assert (task.params.n_samples, task.params.k) == (8, 8)
    settings = task.sample_settings()
    assert len(settings) == 8 and {s.seed for s in settings} == set(range(8))
    assert all(s.temperature == 0.6 and s.top_p == 0.95 for s in settings)
    for bad in ({"k": 9}, {"n_samples": 2, "temperature": 0.0}, {"source": "web"}):
        with pytest.raises(A2RLError):
            get_task("aime2025", bad)


def _fake_hub(monkeypatch: pytest.MonkeyPatch, heldout: list[dict[str, Any]]) -> list[tuple]:
    import datasets

    train = [{"ID": f"{y}-I-{i}", "Year": y, "Problem Number": i, "Question": f"Old problem {y}/{i}",
              "Answer": str(i), "Part": "I"} for y in (2023, 2024, 2025) for i in range(1, 4)]
    calls: list[tuple] = []

    def fake_load(name: str, *args: Any, split: str | None = None, **kwargs: Any) -> Any:
        calls.append((name, split))
        if (name, split) == HUB_TRAIN:
            return train
        if HUB_DATASETS.get(name) == split:
            return heldout
        raise ConnectionError(f"unexpected data set {name} {split}")

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    return calls


def _offline_rows() -> list[dict[str, Any]]:
    task = get_task("aime2025", {"source": "offline"})
    return task.heldout_items()


def test_hub_is_the_default_and_loads_math_ai_aime25(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    rows = [{"problem": r["problem"], "answer": r["answer"], "id": str(i)}
            for i, r in enumerate(_offline_rows())]
    calls = _fake_hub(monkeypatch, rows)
    task = get_task("aime2025")
    items = task.heldout_items()
    assert len(items) == 30 and items[0]["answer"] == rows[0]["answer"]
    (tmp_path / "data").mkdir()
    task.write_train_data(tmp_path / "data")
    train = [json.loads(x) for x in (tmp_path / "data" / "train.jsonl").read_text().splitlines()]
    assert len(train) == 6 and all(t["year"] < 2025 for t in train)  # 2025 rows never train
    assert ("math-ai/aime25", "test") in calls and HUB_TRAIN in calls
    assert "held-out" in task.description(chat_preview=None)
    # MathArena's copy stores integer answers and problem_idx
    rows2 = [{"problem_idx": i + 1, "problem": r["problem"], "answer": int(r["answer"])}
             for i, r in enumerate(_offline_rows())]
    _fake_hub(monkeypatch, rows2)
    other = get_task("aime2025", {"dataset": "MathArena/aime_2025"})
    assert other.heldout_items()[0]["answer"] == rows[0]["answer"]
    assert other.heldout_items()[0]["id"] == "aime2025-1"


def test_hub_failure_names_the_offline_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_hub(monkeypatch, [{"problem": "p", "answer": "1"}] * 29)
    with pytest.raises(A2RLError, match="29 problems"):
        get_task("aime2025").heldout_items()
    import datasets

    monkeypatch.setattr(datasets, "load_dataset",
                        lambda *a, **k: (_ for _ in ()).throw(ConnectionError("offline")))
    with pytest.raises(A2RLError) as err:
        get_task("aime2025").heldout_items()
    assert "source=offline" in (err.value.fix or "")


def test_offline_set_is_aime_shaped_and_train_is_independent(tmp_path: Path) -> None:
    task = get_task("aime2025", {"source": "offline", "n_train": 300})
    held = task.heldout_items()
    assert len(held) == 30 and len({h["id"] for h in held}) == 30
    assert all(h["answer"].isdigit() and 0 <= int(h["answer"]) <= 999 for h in held)
    train = task.train_items()
    assert len(train) == 300 and task.heldout_in_train() == 0
    for t in train:  # every worked solution is right by the task's own scorer
        assert lm_eval_correct(t["solution"], t["answer"]), t
    # the train split is the same whatever the held-out set (drawn from the public seed only)
    assert train == get_task("aime2025", {"source": "offline", "n_train": 300}).train_items()
    paths = task.write_train_data(tmp_path)
    text = paths[0].read_text()
    assert all(h["problem"] not in text for h in held)
    assert AIME2025Task.sandbox_masked_paths()[0].is_file()


def test_scoring_offline_predictions_combines_samples_into_pass_at_k() -> None:
    task = get_task("aime2025", {"source": "offline", "n_samples": 4, "k": 2})
    held = task.heldout_items()
    right = {h["id"]: f"... so \\boxed{{{h['answer']}}}" for h in held}
    preds = []
    for i, h in enumerate(held):  # item i gets (i % 5) right samples, capped at 4
        c = min(i % 5, 4)
        comps = [right[h["id"]]] * c + ["I think \\boxed{1000}"] * (4 - c)
        preds.append(Prediction(id=h["id"], completions=comps))
    outcome = task.score_offline(preds)
    expected = [pass_at_k(4, min(i % 5, 4), 2) for i in range(30)]
    assert outcome.score == pytest.approx(100 * sum(expected) / 30, abs=1e-3)
    assert outcome.metrics["pass@1"] == pytest.approx(
        100 * sum(min(i % 5, 4) / 4 for i in range(30)) / 30, abs=1e-3)
    assert outcome.details[3]["n_correct"] == 3 and outcome.n_items == 30


def test_tiny_evaluation_with_a_real_model(tiny_model: Path) -> None:
    task = get_task("aime2025", {"source": "offline", "n_samples": 2, "k": 2, "max_heldout": 2,
                                 "max_new_tokens": 16})
    outcome = task.evaluate(tiny_model, chat_template_from=tiny_model)
    assert outcome.n_items == 2 and 0.0 <= outcome.score <= 100.0
    assert all(len(d["completions"]) == 2 for d in outcome.details)
    assert "\\boxed{}" in outcome.details[0]["prompt"]
    assert {"pass@2", "pass@1"} <= set(outcome.metrics)


def test_offline_heldout_is_masked_in_the_sandbox(tmp_path: Path) -> None:
    import subprocess
    import sys

    from a2rl.sandbox import get_sandbox, sandbox_masks
    from a2rl.tasks import task_mask_hooks

    try:
        box = get_sandbox("bwrap")
        box.probe()
    except A2RLError as exc:
        pytest.skip(f"bwrap cannot start here: {exc.message}")
    path = AIME2025Task.sandbox_masked_paths()[0]
    probe = (f"import os\np={str(path)!r}\n"
             "print(len(open(p).read()) if os.path.isfile(p) else -1)")
    argv = box.wrap([sys.executable, "-c", probe], workspace=tmp_path,
                    masks=sandbox_masks(*task_mask_hooks(["aime2025"])))
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.strip()) <= 0 and path.stat().st_size > 1000
