"""alpacaeval's metrics against the real `alpaca_eval` package (no network).

Hundreds of synthetic items go through a2rl's whole judging path (`judge_completions`, with a
scripted judge in place of the HTTP call) and, independently, become the annotations
alpaca_eval itself would hold for the same judge decisions: `output_1` = reference, `output_2`
= model, preference 1 / 2 / 1.5, 1.5 for outputs that are exactly equal (alpaca_eval's pairwise
annotator sets it without asking the judge), NaN for a reply that never parses. alpaca_eval's
`get_winrate` and `get_length_controlled_winrate` run on those annotations, the latter on a
`df_gamed.csv`-shaped fixture built here (the Hub file is not reachable in tests); a2rl's win
rate and LC win rate must equal them.

Classes covered: model wins, reference wins, ties, replies that never parse, a parse failure
followed by a valid reply, decorated replies (`**A**`), outputs identical to the reference,
outputs differing from it only in whitespace, empty outputs, and length extremes (a few
characters to 12k).
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from a2rl.tasks._lib import judge as judge_lib
from a2rl.tasks.alpacaeval.task import EVAL_FILE, EVAL_REPO, AlpacaEvalTask
from a2rl.tasks.alpacaeval.winrate import LC_FILE, win_rate
from conftest import serve_on_loopback

alpaca_eval = pytest.importorskip("alpaca_eval")

N_EVAL = 805
_SECTION = re.compile(r"\[The Start of Response ([AB])\]\n(.*?)\n\[The End of Response \1\]", re.S)
CLASSES = ("model", "reference", "tie", "never_parses", "parses_second_time", "decorated",
           "identical", "whitespace_variant", "empty", "long_model", "long_reference")


# ---- fixtures: an offline Hub cache with AlpacaEval's file and a df_gamed.csv stand-in -------


def _hf_file(cache: Path, repo: str, filename: str) -> Path:
    root = cache / f"datasets--{repo.replace('/', '--')}"
    commit = "1" * 40
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(commit)
    path = root / "snapshots" / commit / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_df_gamed(path: Path, n: int = N_EVAL, seed: int = 0) -> None:
    """A file shaped like alpaca_eval's `df_gamed.csv`: for each of two length-gamed baselines
    one row per AlpacaEval instruction (index 0..n-1, in order, as alpaca_eval's lookup of
    `instruction_difficulty` by position needs) with its preference in [0, 1], standardised
    length difference and the instruction's difficulty; `not_gamed_baseline` False. Made-up
    values from a logistic model, so the GLM has a signal to fit."""
    rng = random.Random(seed)
    difficulty = [rng.gauss(0.0, 1.0) for _ in range(n)]
    lines = ["model,index,preference,std_delta_len,instruction_difficulty,not_gamed_baseline"]
    for model, sign in (("gpt4_1106_preview_concise", -1.0), ("gpt4_1106_preview_verbose", 1.0)):
        for i in range(n):
            delta = sign * abs(rng.gauss(1.0, 0.5))
            z = 0.8 * math.tanh(-delta) - 0.7 * difficulty[i] + rng.gauss(0.0, 0.3)
            lines.append(f"{model},{i},{1 / (1 + math.exp(-z)):.6f},{delta:.6f},{difficulty[i]:.6f},False")
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An offline HF cache: 805 evaluation instructions with references of varied length, and
    the df_gamed fixture. Returns the df_gamed path."""
    rng = random.Random(7)
    cache = tmp_path / "hf-cache"
    evals = []
    for i in range(N_EVAL):
        words = rng.choice([1, 5, 40, 200, 800])
        evals.append({"instruction": f"Instruction {i}: explain topic {rng.randrange(10**6)}.",
                      "output": " ".join(f"ref{i}w{k}" for k in range(words)),
                      "generator": "gpt4_1106_preview", "dataset": "helpful_base"})
    _hf_file(cache, EVAL_REPO, EVAL_FILE).write_text(json.dumps(evals))
    gamed = _hf_file(cache, EVAL_REPO, LC_FILE)
    write_df_gamed(gamed)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("A2RL_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")  # never contacted
    monkeypatch.setenv("A2RL_JUDGE_MODEL", "scripted")
    return gamed


# ---- the scripted judge ------------------------------------------------------------------


@dataclass
class Case:
    index: int
    kind: str
    completion: str


class ScriptedJudge:
    """Replaces JudgeClient.chat: decides from the case of the instruction in the prompt."""

    def __init__(self, cases: dict[str, Case], references: dict[str, str]) -> None:
        self.cases, self.references = cases, references
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()

    def chat(self, _client: Any, messages: Sequence[dict[str, str]]) -> str:
        prompt = messages[-1]["content"]
        instruction = prompt.split("[The Start of the Instruction]\n", 1)[1].split("\n[The End", 1)[0]
        case = self.cases[instruction]
        with self.lock:
            self.calls[instruction] += 1
            n_call = self.calls[instruction]
        sections = dict(_SECTION.findall(prompt))
        model_label = "A" if sections["A"] == case.completion else "B"
        ref_label = "B" if model_label == "A" else "A"
        kind = case.kind
        if kind == "never_parses" or (kind == "parses_second_time" and n_call == 1):
            return "Both responses have merits; I lean towards the first, because"
        if kind in ("model", "parses_second_time", "long_model"):
            return model_label
        if kind == "decorated":
            return f"**{model_label}**"
        if kind in ("reference", "empty", "long_reference"):
            return f" {ref_label.lower()} \n"
        return "TIE"  # tie, whitespace_variant


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, ScriptedJudge]]:
    holder: dict[str, ScriptedJudge] = {}
    monkeypatch.setattr(judge_lib.JudgeClient, "chat",
                        lambda self, messages: holder["judge"].chat(self, messages))
    yield holder


def make_cases(items: list[dict[str, Any]], seed: int, n: int) -> dict[str, Case]:
    rng = random.Random(seed)
    chosen = rng.sample(items, n)
    cases: dict[str, Case] = {}
    for k, item in enumerate(chosen):
        kind = CLASSES[k % len(CLASSES)] if k < 2 * len(CLASSES) else rng.choice(CLASSES)
        ref = item["reference"]
        completion = {
            "identical": ref,
            "whitespace_variant": ref + " ",
            "empty": "",
            "long_model": "detail " * rng.randint(1200, 1700),
            "long_reference": "ok",
        }.get(kind, " ".join(f"m{k}w{j}" for j in range(rng.randint(1, 400))))
        cases[item["instruction"]] = Case(index=item["index"], kind=kind, completion=completion)
    return cases


def oracle_preference(case: Case, reference: str) -> float:
    """What alpaca_eval's annotations hold for this case's judge decision."""
    if case.completion == reference:
        return 1.5  # PairwiseAnnotatorLocal._preprocess: equal outputs, no judge
    if case.kind == "never_parses":
        return math.nan  # the parser gives nothing: the annotation stays missing
    if case.kind in ("model", "parses_second_time", "long_model", "decorated"):
        return 2.0
    if case.kind in ("reference", "empty", "long_reference"):
        return 1.0
    return 1.5


def reference_metrics(cases: dict[str, Case], items: list[dict[str, Any]], gamed: Path) -> dict[str, float]:
    import pandas as pd
    from alpaca_eval.metrics import get_winrate, glm_winrate

    by_instruction = {i["instruction"]: i for i in items}
    records = []
    for instruction, case in cases.items():
        ref = by_instruction[instruction]["reference"]
        records.append({"instruction": instruction, "output_1": ref, "output_2": case.completion,
                        "generator_1": "gpt4_1106_preview", "generator_2": "my_model",
                        "preference": oracle_preference(case, ref), "annotator": "reference"})
    # alpaca_eval holds annotations in the evaluation set's order (the model's outputs are
    # merged onto the reference outputs in that order); the GLM's cross-validation folds depend
    # on row order, so the order is part of the reference.
    records.sort(key=lambda r: cases[r["instruction"]].index)
    index = [cases[r["instruction"]].index for r in records]
    frame = pd.DataFrame.from_records(records, index=pd.Index(index))
    wr = get_winrate(frame)
    original = glm_winrate.hf_hub_download
    glm_winrate.hf_hub_download = lambda *a, **k: str(gamed)
    try:
        lc = glm_winrate.get_length_controlled_winrate(frame, save_weights_dir=None,
                                                       is_add_glm_preference_inplace=False)
    finally:
        glm_winrate.hf_hub_download = original
    return {"win_rate": float(wr["win_rate"]), "n_total": float(wr["n_total"]),
            "standard_error": float(wr["standard_error"]),
            "length_controlled_winrate": float(lc["length_controlled_winrate"]),
            "lc_standard_error": float(lc["lc_standard_error"])}


@pytest.mark.parametrize(("seed", "n"), [(1, 400), (2, 300), (3, 805)])
def test_win_rate_and_lc_equal_alpaca_eval(hub: Path, scripted: dict[str, ScriptedJudge], seed: int,
                                           n: int) -> None:
    task = AlpacaEvalTask({"source": "hub", "seed": seed, "parse_retries": 1, "judge_concurrency": 4,
                           "judge_protocol": "a2rl"})
    items = task.heldout_items()
    assert len(items) == N_EVAL
    cases = make_cases(items, seed, n)
    chosen = [i for i in items if i["instruction"] in cases]
    judge = ScriptedJudge(cases, {i["instruction"]: i["reference"] for i in chosen})
    scripted["judge"] = judge
    outcome = task.judge_completions(chosen, [i["instruction"] for i in chosen],
                                     [cases[i["instruction"]].completion for i in chosen])
    ref = reference_metrics(cases, items, hub)

    kinds = Counter(c.kind for c in cases.values())
    assert set(kinds) == set(CLASSES)
    m = outcome.metrics
    assert m["judge_unparseable"] == kinds["never_parses"] > 0
    assert m["n_scored"] == ref["n_total"] == n - kinds["never_parses"]
    assert abs(m["win_rate"] - ref["win_rate"]) <= 1e-9
    assert abs(m["win_rate_standard_error"] - ref["standard_error"]) <= 1e-9
    assert m["lc_available"] == 1.0, [d for d in outcome.details if d["kind"] == "summary"][0]["lc_note"]
    assert abs(m["lc_win_rate"] - ref["length_controlled_winrate"]) <= 1e-9
    assert abs(m["lc_standard_error"] - ref["lc_standard_error"]) <= 1e-9
    assert outcome.score == m["lc_win_rate"]

    # per item: the preference a2rl recorded is the one alpaca_eval holds
    rows = [d for d in outcome.details if d["kind"] == "item"]
    for row in rows:
        case = cases[row["instruction"]]
        expected = oracle_preference(case, row["reference"])
        if math.isnan(expected):
            assert row["preference"] is None, row["id"]
        else:
            assert row["preference"] == expected, row["id"]
    # identical outputs never reached the judge; whitespace variants did
    for instruction, case in cases.items():
        if case.kind == "identical":
            assert judge.calls[instruction] == 0
        elif case.kind == "whitespace_variant":
            assert judge.calls[instruction] == 1
        elif case.kind in ("never_parses", "parses_second_time"):
            assert judge.calls[instruction] == 2  # parse_retries=1

    # the order items are judged in does not change LC (rows go to the GLM in AlpacaEval order)
    again = task.judge_completions(chosen[::-1], [i["instruction"] for i in chosen[::-1]],
                                   [cases[i["instruction"]].completion for i in chosen[::-1]])
    assert again.metrics["lc_win_rate"] == m["lc_win_rate"] and again.metrics["win_rate"] == m["win_rate"]


def test_the_issue_example_unparseable_are_dropped_not_lost() -> None:
    """400 items, 41 without a verdict: counting those as losses gave 54.1 where alpaca_eval
    gives 60.3 (the numbers in the report). a2rl now gives alpaca_eval's."""
    from alpaca_eval.metrics import get_winrate

    prefs: list[float | None] = [2.0] * 216 + [1.0] * 142 + [1.5] * 1 + [None] * 41
    ours = win_rate(prefs)["win_rate"]
    theirs = float(get_winrate([{"preference": math.nan if p is None else p} for p in prefs])["win_rate"])
    assert abs(ours - theirs) <= 1e-9
    assert round(ours, 1) == 60.3
    as_losses = 100 * (216 + 0.5) / 400
    assert round(as_losses, 1) == 54.1


def test_native_win_rate_equals_get_winrate_on_random_preferences() -> None:
    """`win_rate` is used without pandas; on any mix of preference values (discrete, weighted,
    legacy 0, out of range, missing) it equals alpaca_eval's get_winrate, every field."""
    from alpaca_eval.metrics import get_winrate

    rng = random.Random(0)
    for _ in range(300):
        prefs: list[float | None] = [
            rng.choice([1.0, 2.0, 1.5, None, 0.0, rng.uniform(0.5, 2.5), rng.uniform(1.0, 2.0)])
            for _ in range(rng.randint(1, 60))]
        ours = win_rate(prefs)
        theirs = get_winrate([{"preference": math.nan if p is None else p} for p in prefs])
        for key in ("win_rate", "standard_error", "n_wins", "n_wins_base", "n_draws", "n_total",
                    "discrete_win_rate"):
            a, b = ours[key], float(theirs[key])
            assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-9, (key, prefs)


# ---- alpaca_eval's own annotator protocol (the default judge protocol) -------------------


class LogprobJudge:
    """An OpenAI-compatible judge that answers like GPT-4 Turbo under alpaca_eval's annotator:
    one token and its top log-probabilities. For each case it knows p_model, the probability
    that the model's output is the better one, and gives P(m) = p_model when `m` (output_1 of
    the prompt) is the model's output, else 1 - p_model. Whatever order alpaca_eval's switch
    picks, the preference must come out as 1 + p_model. It also checks every request is exactly
    what alpaca_eval would send."""

    def __init__(self, cases: dict[str, tuple[str, str, float | None]]) -> None:
        self.cases = cases  # instruction -> (reference, completion, p_model; None = no identifiers)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def expected_messages(self, instruction: str) -> tuple[list[dict[str, str]], bool]:
        import pandas as pd
        from alpaca_eval import utils

        reference, completion, _ = self.cases[instruction]
        switched = utils.random_seeded_choice(seed="is_switched_outputs" + instruction + "0",
                                              choices=[False, True])
        out_1, out_2 = (completion, reference) if switched else (reference, completion)
        template = (Path(alpaca_eval.__file__).parent / "evaluators_configs" / "alpaca_eval_clf_gpt4_turbo"
                    / "alpaca_eval_clf.txt").read_text()
        prompts, _ = utils.make_prompts(pd.DataFrame([{"instruction": instruction, "output_1": out_1,
                                                       "output_2": out_2}]), template)
        return utils.prompt_to_chatml(prompts[0]), switched

    def handle(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        user = messages[-1]["content"]
        instruction = user.split('"instruction": """', 1)[1].split('""",', 1)[0]
        expected, switched = self.expected_messages(instruction)
        with self.lock:
            self.requests.append(body)
        assert messages == expected, "not the prompt alpaca_eval sends"
        sent = (body["max_tokens"], body["temperature"], body["logprobs"], body["top_logprobs"])
        assert sent == (1, 1.0, True, 5), sent
        _, _, p_model = self.cases[instruction]
        if p_model is None:
            top = [{"token": "Both", "logprob": -0.1}, {"token": "The", "logprob": -2.5}]
        else:
            p_m = p_model if switched else 1.0 - p_model  # switched: m is the model's output
            top = [{"token": t, "logprob": math.log(p)} for t, p in (("m", p_m), ("M", 1.0 - p_m)) if p > 0]
            top.append({"token": "Both", "logprob": -20.0})
        token = top[0]["token"]
        return {"id": "x", "object": "chat.completion", "model": body["model"],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                "choices": [{"index": 0, "finish_reason": "length",
                             "message": {"role": "assistant", "content": token},
                             "logprobs": {"content": [{"token": token, "logprob": top[0]["logprob"],
                                                       "top_logprobs": top}]}}]}


@pytest.fixture
def logprob_judge(hub: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, LogprobJudge]]:
    holder: dict[str, LogprobJudge] = {}
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        try:
            return JSONResponse(holder["judge"].handle(await request.json()))
        except AssertionError as exc:  # a wrong request fails the test, not just the reply
            return JSONResponse({"error": str(exc)}, status_code=400)

    with serve_on_loopback(app) as port:
        monkeypatch.setenv("A2RL_JUDGE_BASE_URL", f"http://127.0.0.1:{port}/v1")
        yield holder


def test_alpaca_eval_annotator_protocol_equals_alpaca_eval(hub: Path, logprob_judge: dict[str, LogprobJudge]
                                                           ) -> None:
    task = AlpacaEvalTask({"source": "hub", "parse_retries": 0, "judge_concurrency": 4})
    assert task.params.judge_protocol == "alpaca_eval"  # the default
    items = task.heldout_items()
    rng = random.Random(11)
    chosen = rng.sample(items, 300)
    cases: dict[str, tuple[str, str, float | None]] = {}
    for k, item in enumerate(chosen):
        kind = k % 6
        ref = item["reference"]
        completion = ref if kind == 0 else "answer " * rng.choice([1, 30, 900])
        p_model = (None if kind == 1 else 1.0 if kind == 2 else 0.0 if kind == 3
                   else round(rng.random(), 6))
        cases[item["instruction"]] = (ref, completion, p_model)
    logprob_judge["judge"] = LogprobJudge(cases)
    chosen.sort(key=lambda i: i["index"])
    out = task.judge_completions(chosen, [i["instruction"] for i in chosen],
                                 [cases[i["instruction"]][1] for i in chosen])

    def oracle(instruction: str) -> float:
        ref, completion, p_model = cases[instruction]
        if completion == ref:
            return 1.5
        return math.nan if p_model is None else 1.0 + p_model

    rows = [d for d in out.details if d["kind"] == "item"]
    for row in rows:
        expected = oracle(row["instruction"])
        if math.isnan(expected):
            assert row["preference"] is None and row["verdict"] == "unparseable"
        else:
            assert row["preference"] == pytest.approx(expected, abs=1e-12)
    n_identical = sum(1 for r, c, _ in cases.values() if r == c)
    assert len(logprob_judge["judge"].requests) == len(cases) - n_identical  # identical: never asked
    import pandas as pd
    from alpaca_eval.metrics import get_winrate, glm_winrate

    frame = pd.DataFrame.from_records(
        [{"instruction": i["instruction"], "output_1": i["reference"], "output_2": cases[i["instruction"]][1],
          "generator_1": "gpt4_1106_preview", "generator_2": "m", "preference": oracle(i["instruction"]),
          "annotator": ANNOTATOR_NAME} for i in chosen], index=pd.Index([i["index"] for i in chosen]))
    assert abs(out.metrics["win_rate"] - float(get_winrate(frame)["win_rate"])) <= 1e-9
    original = glm_winrate.hf_hub_download
    glm_winrate.hf_hub_download = lambda *a, **k: str(hub)
    try:
        lc = glm_winrate.get_length_controlled_winrate(frame, save_weights_dir=None,
                                                       is_add_glm_preference_inplace=False)
    finally:
        glm_winrate.hf_hub_download = original
    assert abs(out.metrics["lc_win_rate"] - float(lc["length_controlled_winrate"])) <= 1e-9
    summary = next(d for d in out.details if d["kind"] == "summary")
    assert "weighted_alpaca_eval_gpt4_turbo" in summary["judge_protocol"]


ANNOTATOR_NAME = "weighted_alpaca_eval_gpt4_turbo"


def test_alpaca_eval_evaluate_end_to_end_equals_a2rl(hub: Path, logprob_judge: dict[str, LogprobJudge],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The strongest check: alpaca_eval's own `evaluate` (its PairwiseAnnotator, OpenAI client,
    parser, switch, equal-output rule, get_length_controlled_winrate) and a2rl, on the same
    outputs and the same logprob judge, give the same preference for every instruction and the
    same win rate and LC win rate. The first N AlpacaEval instructions in order, so alpaca_eval's
    positional difficulty lookup and a2rl's lookup by instruction index coincide."""
    from alpaca_eval import main
    from alpaca_eval.metrics import glm_winrate

    n = 150
    task = AlpacaEvalTask({"source": "hub", "parse_retries": 0, "judge_concurrency": 4, "max_heldout": n})
    items = task.heldout_items()
    assert [i["index"] for i in items] == list(range(n))
    rng = random.Random(5)
    cases: dict[str, tuple[str, str, float | None]] = {}
    for k, item in enumerate(items):
        kind = k % 6
        completion = item["reference"] if kind == 0 else "answer " * rng.choice([1, 30, 900])
        p_model = None if kind == 1 else 1.0 if kind == 2 else 0.0 if kind == 3 else round(rng.random(), 6)
        cases[item["instruction"]] = (item["reference"], completion, p_model)
    judge = LogprobJudge(cases)
    logprob_judge["judge"] = judge
    ours = task.judge_completions(items, [i["instruction"] for i in items],
                                  [cases[i["instruction"]][1] for i in items])
    n_a2rl_requests = len(judge.requests)

    monkeypatch.setenv("OPENAI_API_KEY", "not-a-key")
    monkeypatch.setenv("OPENAI_BASE_URL", os.environ["A2RL_JUDGE_BASE_URL"])
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.setattr(glm_winrate, "hf_hub_download", lambda *a, **k: str(hub))
    reference = [{"instruction": i["instruction"], "output": i["reference"], "generator": "gpt4_1106_preview"}
                 for i in items]
    model = [{"instruction": i["instruction"], "output": cases[i["instruction"]][1], "generator": "my_model"}
             for i in items]
    board, annotations = main.evaluate(
        model_outputs=model, reference_outputs=reference, annotators_config=ANNOTATOR_NAME,
        output_path=None, precomputed_leaderboard=None, is_return_instead_of_print=True,
        is_cache_leaderboard=False, caching_path=None, metric_kwargs={"save_weights_dir": None})
    theirs = board.to_dict(orient="records")[0]

    # the same requests (identical outputs asked by neither), the same preference per instruction
    assert len(judge.requests) == 2 * n_a2rl_requests
    prefs = {a["instruction"]: a["preference"] for a in annotations}
    rows = [d for d in ours.details if d["kind"] == "item"]
    assert len(rows) == len(prefs) == n
    for row in rows:
        p = prefs[row["instruction"]]
        if p is None or (isinstance(p, float) and math.isnan(p)):
            assert row["preference"] is None, row["id"]
        else:
            assert row["preference"] == pytest.approx(float(p), abs=1e-12), row["id"]
    assert abs(ours.metrics["win_rate"] - float(theirs["win_rate"])) <= 1e-9
    assert ours.metrics["n_scored"] == float(theirs["n_total"])
    assert abs(ours.metrics["lc_win_rate"] - float(theirs["length_controlled_winrate"])) <= 1e-9
