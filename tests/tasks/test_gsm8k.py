"""The gsm8k task: lm-eval's extraction, the opt-in numeric comparison (its fixture), the offline
stand-in's splits, the hub path without a
network (its failure mode, and its row format through hand-written GSM8K rows), and one real
evaluation on the tiny model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from a2rl import A2RLError
from a2rl.tasks import get_task
from a2rl.tasks.gsm8k.scoring import extract_flexible, extract_strict, numeric_match
from a2rl.tasks.gsm8k.task import (
    INSTRUCTION,
    SYMBOLIC_SUFFIX,
    TRAIN_SEED,
    GSM8KTask,
    hub_item,
    parse_gold,
)

FIXTURE = Path(__file__).parent.parent / "fixtures" / "gsm8k_extraction.jsonl"
CASES = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]
SMALL = {"source": "offline", "n_train": 60, "n_heldout": 20, "heldout_seed": 4242}

# Two rows in the real openai/gsm8k schema (the first is the data set's first train row).
HUB_ROWS = {
    "train": [
        {"question": "Natalia sold clips to 48 of her friends in April, and then she sold half as "
                     "many clips in May. How many clips did Natalia sell altogether in April and "
                     "May?",
         "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = "
                   "<<48+24=72>>72 clips altogether in April and May.\n#### 72"},
        {"question": "A shop sells 1,250 pens a week. How many pens does it sell in 4 weeks?",
         "answer": "It sells 1,250*4 = <<1250*4=5000>>5,000 pens.\n#### 5,000"},
    ],
    "test": [
        {"question": "Janet has 3 apples and eats 5. How many apples does she owe?",
         "answer": "She has 3-5 = <<3-5=-2>>-2 apples.\n#### -2"},
    ],
}


def test_fixture_is_rich_enough() -> None:
    assert len(CASES) >= 30
    for case in CASES:
        assert set(case) == {"completion", "gold", "strict", "flexible", "why"}
    # every combination of verdicts is exercised
    assert {(c["strict"], c["flexible"]) for c in CASES} == {(True, True), (True, False),
                                                              (False, True), (False, False)}


@pytest.mark.parametrize("case", CASES, ids=[c["why"][:40] for c in CASES])
def test_numeric_metric_fixture(case: dict[str, Any]) -> None:
    """The fixture's verdicts are those of a2rl's opt-in numeric comparison (lm-eval's own are
    checked against the real package in test_reference_gsm8k.py)."""
    completion, gold = case["completion"], case["gold"]
    assert numeric_match(extract_strict(completion), gold) is case["strict"]
    assert numeric_match(extract_flexible(completion), gold) is case["flexible"]
    # the task reports both numeric verdicts, and scores one only when asked to
    item = {"final": gold, "answer": f"Work.\n#### {gold}"}
    for scored, key in (("numeric_strict", "strict"), ("numeric_flexible", "flexible")):
        task = GSM8KTask({"source": "offline", "heldout_seed": 1, "scored_metric": scored})
        verdict = task.score_completion(item, completion)
        assert verdict.metrics["numeric_strict"] == float(case["strict"])
        assert verdict.metrics["numeric_flexible"] == float(case["flexible"])
        assert verdict.score == float(case[key])
        assert set(verdict.metrics) == {"lm_eval_strict_match", "lm_eval_flexible_extract",
                                        "numeric_strict", "numeric_flexible"}


def test_extractors_follow_lm_eval() -> None:
    assert extract_strict("#### 5\n#### 7") == "5"
    assert extract_flexible("#### 5\n#### 7") == "7"
    assert extract_strict("no marker 12") is None and extract_flexible("none") is None
    assert extract_flexible("costs $1,000.") == "$1,000."
    assert extract_flexible("Wait...") == "..."  # lm-eval's regex quirk, kept on purpose
    assert parse_gold("a\nb\n#### 1,000") == "1000"
    with pytest.raises(ValueError):
        parse_gold("no final line")


def test_offline_splits(a2rl_home: Path) -> None:
    task = get_task("gsm8k", SMALL)
    assert isinstance(task, GSM8KTask)
    held, train = task.heldout_items(), task.train_items()
    assert (len(held), len(train)) == (20, 60)
    held_q, train_q = [e["question"] for e in held], [e["question"] for e in train]
    assert len(set(held_q)) == len(held_q) and len(set(train_q)) == len(train_q)
    assert task.heldout_in_train() == len(set(held_q) & set(train_q))  # independent draws
    for item in held + train:
        assert set(item) == {"id", "question", "answer", "final"}
        assert not item["question"].endswith(SYMBOLIC_SUFFIX)
        last = item["answer"].splitlines()[-1]
        assert last == f"#### {item['final']}" and item["answer"].count("####") == 1
        assert len(item["answer"].splitlines()) > 1  # gsm_symbolic's worked solution is kept
    # reproducible for a given seed
    assert get_task("gsm8k", SMALL).heldout_items() == held


def test_offline_defaults_dedup_and_secret_seed(a2rl_home: Path) -> None:
    task = get_task("gsm8k", {"source": "offline"})
    assert isinstance(task, GSM8KTask)
    p = task.params
    secret = a2rl_home / "secrets" / "gsm8k-heldout-seed"
    assert int(secret.read_text()) == p.heldout_seed != TRAIN_SEED
    assert secret.stat().st_mode & 0o077 == 0
    assert (p.n_train, p.n_heldout) == (2000, 200)  # resolved, so run.json records them
    train = task.train_items()
    assert len(train) == 2000 and len({e["question"] for e in train}) == 2000
    raw = task._symbolic(TRAIN_SEED, 2000, "train")
    assert len({e["question"] for e in raw}) < len(raw)  # the generator repeats: dedup matters
    overlap = {e["question"] for e in train} & {e["question"] for e in task.heldout_items()}
    assert task.heldout_in_train() == len(overlap) <= 5  # chance only: a large template space
    assert get_task("gsm8k", {"source": "offline"}).fingerprint() == task.fingerprint()
    fixed = get_task("gsm8k", {"source": "offline", "heldout_seed": 7})
    assert fixed.fingerprint() != task.fingerprint()


def test_bad_options() -> None:
    with pytest.raises(A2RLError, match="bad options"):
        get_task("gsm8k", {"source": "offline", "heldout_seed": TRAIN_SEED})
    with pytest.raises(A2RLError, match="bad options"):
        get_task("gsm8k", {"heldout_seed": 3})  # the hub test split has no seed
    with pytest.raises(A2RLError, match="bad options"):
        get_task("gsm8k", {"scored_metric": "lenient"})
    with pytest.raises(A2RLError, match="bad options"):
        get_task("gsm8k", {"max_new_tokens": 64})  # decoding belongs to the task


def _hub_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Make every Hub access fail at once (and ignore any warm cache on this machine)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import datasets.config
    import huggingface_hub.constants

    # Both read the environment at import time, which may have happened already.
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf" / "datasets")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))


def test_hub_source_fails_loudly_without_network(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    _hub_offline(monkeypatch, tmp_path)
    task = get_task("gsm8k")  # hub is the default; building the task needs no network
    assert task.params.model_dump()["source"] == "hub"
    with pytest.raises(A2RLError, match="openai/gsm8k") as err:
        task.heldout_items()
    assert err.value.fix is not None and "source=offline" in err.value.fix
    with pytest.raises(A2RLError):
        task.write_train_data(tmp_path / "data")
    assert not (tmp_path / "data" / "train.jsonl").exists()


def test_hub_rows_become_items() -> None:
    item = hub_item(HUB_ROWS["train"][0], 0, "train")
    assert item == {"id": "train-0", "question": HUB_ROWS["train"][0]["question"],
                    "answer": HUB_ROWS["train"][0]["answer"], "final": "72"}
    assert hub_item(HUB_ROWS["train"][1], 1, "train")["final"] == "5000"
    assert hub_item(HUB_ROWS["test"][0], 0, "test")["final"] == "-2"
    with pytest.raises(ValueError):
        hub_item({"question": "q", "answer": "no final line"}, 0, "train")


def test_hub_path_end_to_end_with_stubbed_loader(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    calls: list[tuple[str, str]] = []

    def fake_load(name: str, config: str) -> dict[str, list[dict[str, str]]]:
        calls.append((name, config))
        return HUB_ROWS

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    task = get_task("gsm8k")
    assert isinstance(task, GSM8KTask)
    [held] = task.heldout_items()
    assert held["final"] == "-2" and len(task.train_items()) == 2
    assert calls == [("openai/gsm8k", "main")]  # both splits from one load
    assert task.score_completion(held, "3 - 5 = -2\n#### -2").score == 1.0
    assert task.score_completion(held, "#### 2").score == 0.0
    [path] = task.write_train_data(tmp_path / "data")
    rows = [json.loads(line) for line in path.open()]
    assert set(rows[0]) == {"id", "question", "answer", "final", "prompt"}
    assert rows[0]["final"] == "72" and rows[0]["answer"].endswith("#### 72")
    assert rows[0]["prompt"] == f"{INSTRUCTION}\n\nQuestion: {rows[0]['question']}"
    text = task.description(chat_preview=None)
    assert "openai/gsm8k" in text and held["question"] not in text

    monkeypatch.setattr(datasets, "load_dataset",
                        lambda name, config: {"train": [{"question": "q", "answer": "x"}],
                                              "test": []})
    with pytest.raises(A2RLError, match="not in the expected GSM8K format"):
        get_task("gsm8k").heldout_items()


def test_description_shows_the_rendered_prompt(tiny_model: Path) -> None:
    from a2rl.inference._chat import load_tokenizer, render_chat

    tok = load_tokenizer(tiny_model)
    task = get_task("gsm8k", SMALL)
    assert isinstance(task, GSM8KTask)
    text = task.description(chat_preview=lambda m: render_chat(tok, m))
    first = task.train_items()[0]
    assert render_chat(tok, task.messages(first)) in text
    assert "<|im_start|>user" in text and INSTRUCTION in text
    assert "greedy" in text and "512" in text and "generation_config.json" in text
    assert r"#### (\-?[0-9\.\,]+)" in text and "(-?[$0-9.,]{2,})|(-?[0-9]+)" in text
    assert "**lm-eval 0.4.13 gsm8k (task version 3.0) exact_match, strict-match filter**" in text
    assert "`1000.0`" in text  # the string comparison is spelled out
    flexible = get_task("gsm8k", {**SMALL, "scored_metric": "flexible"})
    assert "exact_match, flexible-extract filter**" in flexible.description(chat_preview=None)
    numeric = get_task("gsm8k", {**SMALL, "scored_metric": "numeric_strict"})
    assert "NOT lm-eval's exact_match" in numeric.description(chat_preview=None)
    for item in task.heldout_items():
        assert item["question"] not in text
    assert str(SMALL["heldout_seed"]) not in text


def test_evaluate_on_tiny_model(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from a2rl.inference import GenerationSettings
    from a2rl.tasks._core.task import EvalOutcome

    # The random model never ends its turn; a short budget keeps the test fast without changing
    # the code path (the real setting is asserted below).
    assert GSM8KTask.generation == GenerationSettings(max_new_tokens=512, stop=("Question:",))
    monkeypatch.setattr(GSM8KTask, "generation",
                        GenerationSettings(max_new_tokens=24, stop=("Question:",)))
    task = get_task("gsm8k", {**SMALL, "n_heldout": 4})
    progress: list[tuple[int, int]] = []
    outcome = task.evaluate(tiny_model, chat_template_from=tiny_model,
                            on_progress=lambda done, total: progress.append((done, total)))
    assert isinstance(outcome, EvalOutcome) and outcome.n_items == 4
    assert set(outcome.metrics) == {"lm_eval_strict_match", "lm_eval_flexible_extract",
                                    "numeric_strict", "numeric_flexible", "scored_metric_index",
                                    "heldout_in_train"}
    assert outcome.metrics["scored_metric_index"] == 0.0  # "strict": lm-eval strict-match
    assert outcome.score == outcome.metrics["lm_eval_strict_match"]
    assert 0.0 <= outcome.metrics["lm_eval_flexible_extract"] <= 100.0 and progress[-1] == (4, 4)
    assert len(outcome.details) == 4
    assert all({"lm_eval_strict_match", "lm_eval_flexible_extract", "completion"} <= set(d)
               for d in outcome.details)



def test_normalisation_equals_lm_eval_regexes_and_stays_linear() -> None:
    """The `(?s).*#### ` ignore-regex is cut without the regex (it backtracks from every start,
    quadratic in an answer without the mark): the same strings come out, fast on 1 MiB."""
    import random
    import re
    import time

    from a2rl.tasks.gsm8k.scoring import IGNORE_REGEXES, _lm_eval_normalize

    def by_regex(text: str) -> str:
        for pattern in IGNORE_REGEXES:
            text = re.sub(pattern, "", text)
        return text.rstrip("\x00").lower()

    rng = random.Random(7)
    alphabet = ["#### ", "#", " ", "1", ",", "$", ".", "\n", "A", "####", "\x00"]
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert _lm_eval_normalize(text) == by_regex(text), repr(text)
    started = time.process_time()
    _lm_eval_normalize("9" * (1 << 20))
    assert time.process_time() - started < 5.0  # CPU time; the regex takes minutes
