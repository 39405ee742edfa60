"""alpacaeval: data sources, strict verdict parsing, the judge protocol against a real (scripted)
OpenAI-compatible HTTP judge on loopback, retries, the judgement cache, key hygiene, LC and a
full evaluation of the tiny model through the grader's evaluation child."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from a2rl import A2RLError
from a2rl.schema import TaskSpec
from a2rl.tasks import BUILTIN_TASKS
from a2rl.tasks._lib.judge import JudgeClient, JudgeError, JudgeSettings
from a2rl.tasks.alpacaeval.task import (
    EVAL_FILE,
    EVAL_REPO,
    LC_FILE,
    PROMPT_FILE,
    TRAIN_FILE,
    TRAIN_REPO,
    AlpacaEvalParams,
    AlpacaEvalTask,
    judge_template,
    judge_template_sha256,
    model_is_a,
    parse_verdict,
    render_judge_prompt,
)
from conftest import serve_on_loopback

SECRET = "sk-test-7f3c0ffee-do-not-leak"
MAGIC = "PINEAPPLE"
JUDGE_MODEL = "scripted-judge"
FAST = {"source": "offline", "judge_backoff_s": 0.001, "judge_max_backoff_s": 0.01,
        "judge_concurrency": 4, "judge_protocol": "a2rl"}
"""These tests drive a2rl's own pairwise judge protocol (alpaca_eval's annotator protocol is
tested against the package in test_reference_alpacaeval.py)."""
_SECTION = re.compile(r"\[The Start of Response ([AB])\]\n(.*?)\n\[The End of Response \1\]", re.S)


# ---- a scripted OpenAI-compatible judge ------------------------------------------------------


@dataclass
class ScriptedJudge:
    """Rule: the response containing MAGIC wins; else the longer one; equal length = TIE.
    Can be told to fail (HTTP status) or to reply with prose for the next N requests."""

    fail_next: int = 0
    fail_status: int = 500
    retry_after: str | None = None
    garbage_next: int = 0
    garbage_always: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def verdict(prompt: str) -> str:
        sections = dict(_SECTION.findall(prompt))
        a, b = sections["A"], sections["B"]
        if (MAGIC in a) != (MAGIC in b):
            return "A" if MAGIC in a else "B"
        if len(a) != len(b):
            return "A" if len(a) > len(b) else "B"
        return "TIE"

    def handle(self, body: dict[str, Any], auth: str | None) -> tuple[int, dict[str, Any], dict[str, str]]:
        prompt = body["messages"][-1]["content"]
        with self.lock:
            self.requests.append({"model": body["model"], "auth": auth, "prompt": prompt})
            if self.fail_next > 0:
                self.fail_next -= 1
                headers = {"Retry-After": self.retry_after} if self.retry_after else {}
                return self.fail_status, {"error": {"message": "scripted failure"}}, headers
            garbage = self.garbage_always or self.garbage_next > 0
            if self.garbage_next > 0:
                self.garbage_next -= 1
        text = "I think Response A is slightly better, because" if garbage else f" {self.verdict(prompt)}.\n"
        return 200, {"id": "x", "object": "chat.completion", "model": body["model"],
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": text}}]}, {}


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedJudge]:
    state = ScriptedJudge()
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:  # Request resolved at module level (FastAPI)
        status, payload, headers = state.handle(await request.json(), request.headers.get("authorization"))
        return JSONResponse(payload, status_code=status, headers=headers)

    with serve_on_loopback(app) as port:
        monkeypatch.setenv("A2RL_JUDGE_BASE_URL", f"http://127.0.0.1:{port}/v1")
        monkeypatch.setenv("A2RL_JUDGE_MODEL", JUDGE_MODEL)
        monkeypatch.setenv("A2RL_JUDGE_API_KEY", SECRET)
        yield state


def make_task(**params: Any) -> AlpacaEvalTask:
    return AlpacaEvalTask({**FAST, **params})


def judge_all(task: AlpacaEvalTask, completions: list[str]) -> Any:
    items = task.heldout_items()
    return task.judge_completions(items, [i["instruction"] for i in items], completions)


def item_rows(outcome: Any) -> list[dict[str, Any]]:
    return [d for d in outcome.details if d["kind"] == "item"]


def summary(outcome: Any) -> dict[str, Any]:
    rows = [d for d in outcome.details if d["kind"] == "summary"]
    assert len(rows) == 1
    return rows[0]


# ---- pure functions --------------------------------------------------------------------------


@pytest.mark.parametrize(("reply", "expected"), [
    ("A", "A"), ("B", "B"), ("TIE", "TIE"), ("tie", "TIE"), (" b \n", "B"), ("A.", "A"),
    ("**A**", "A"), ("'B'", "B"), ("(Tie)", "TIE"),
    ("Response A", None), ("A, because it is longer", None), ("A or B", None), ("", None),
    ("AB", None), ("TIES", None), ("<think>hmm</think>A", None), ("A\nB", None), ("draw", None),
])
def test_parse_verdict_is_strict(reply: str, expected: str | None) -> None:
    assert parse_verdict(reply) == expected


def test_prompt_file_and_single_pass_rendering() -> None:
    template = judge_template()
    assert {"{instruction}", "{output_a}", "{output_b}"} <= set(re.findall(r"\{\w+\}", template))
    assert len(judge_template_sha256()) == 64
    text = render_judge_prompt(template, instruction="Say {output_b}", output_a="{instruction} }{",
                               output_b="B text")
    assert "Say {output_b}" in text and "{instruction} }{" in text and "B text" in text
    assert "TIE" in template


def test_order_is_seeded_per_item() -> None:
    ids = [f"alpacaeval-{i}" for i in range(50)]
    first = [model_is_a(0, i) for i in ids]
    assert first == [model_is_a(0, i) for i in ids]  # deterministic
    assert any(first) and not all(first)
    assert first != [model_is_a(1, i) for i in ids]  # the seed matters


def test_api_key_is_not_a_param() -> None:
    with pytest.raises(ValidationError):
        AlpacaEvalParams(judge_api_key="x")  # type: ignore[call-arg]


# ---- data ------------------------------------------------------------------------------------


def test_offline_source_data(tmp_path: Path) -> None:
    task = make_task()
    held = task.heldout_items()
    assert len(held) == 20 and all(i["reference"] and i["instruction"] for i in held)
    assert len(make_task(max_heldout=3).heldout_items()) == 3
    [path] = task.write_train_data(tmp_path / "data")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 40
    assert set(rows[0]) == {"id", "instruction", "input", "output", "prompt"}
    held_text = {i["instruction"] for i in held}
    assert not held_text & {r["instruction"] for r in rows}
    with_input = next(r for r in rows if r["input"])
    assert with_input["prompt"] == f"{with_input['instruction']}\n\n{with_input['input']}"
    assert len(make_task(n_train=5).train_items()) == 5


def test_hub_source_offline_raises_a2rl_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hf-cache"))
    task = AlpacaEvalTask({"source": "hub"})
    with pytest.raises(A2RLError) as info:
        task.heldout_items()
    assert EVAL_FILE in info.value.message and info.value.fix and "source=offline" in info.value.fix
    with pytest.raises(A2RLError):
        task.write_train_data(tmp_path / "data")


def _fake_hf_file(cache: Path, repo: str, filename: str) -> Path:
    """Place a file where hf_hub_download(local_files_only=True) looks for it."""
    root = cache / f"datasets--{repo.replace('/', '--')}"
    commit = "0" * 40
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(commit)
    path = root / "snapshots" / commit / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An offline HF cache holding a 12-item AlpacaEval file and a small Alpaca parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cache = tmp_path / "hf-cache"
    evals = [{"instruction": f"Eval instruction number {i}?",
              "output": f"Reference answer {i}. " * (1 + i % 3),
              "generator": "gpt4_1106_preview", "dataset": "helpful_base"} for i in range(12)]
    _fake_hf_file(cache, EVAL_REPO, EVAL_FILE).write_text(json.dumps(evals))
    train = {"instruction": ["Train one.", "eval  instruction NUMBER 3?", "Train three.", "Train four."],
             "input": ["", "", "some input", ""], "output": ["o1", "o2", "o3", "o4"]}
    pq.write_table(pa.table(train), _fake_hf_file(cache, TRAIN_REPO, TRAIN_FILE))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache


def _write_df_gamed(cache: Path, n: int = 12) -> None:
    """A synthetic stand-in for alpaca_eval's df_gamed.csv (same columns, made-up values)."""
    import random

    rng = random.Random(0)
    rows = ["model,index,preference,std_delta_len,instruction_difficulty,not_gamed_baseline"]
    for model, gamed in (("gpt4_gamed_concise", False), ("gpt4_gamed_verbose", False), ("m", True)):
        for i in range(n):
            rows.append(f"{model},{i},{rng.random():.4f},{rng.gauss(0, 1):.4f},{(i % 4) / 4:.2f},{gamed}")
    _fake_hf_file(cache, EVAL_REPO, LC_FILE).write_text("\n".join(rows) + "\n")


def test_hub_source_from_cache(fake_hub: Path, tmp_path: Path) -> None:
    task = AlpacaEvalTask({"source": "hub", "n_train": 4})
    held = task.heldout_items()
    assert len(held) == 12 and held[3]["index"] == 3 and held[0]["reference_generator"] == "gpt4_1106_preview"
    train = task.train_items()
    # the first 4 Alpaca rows, minus the one repeating an eval instruction (whitespace/case aside)
    assert [r["instruction"] for r in train] == ["Train one.", "Train three.", "Train four."]
    assert train[1]["prompt"] == "Train three.\n\nsome input"
    assert len(AlpacaEvalTask({"source": "hub", "max_heldout": 5}).heldout_items()) == 5


def test_lc_when_its_file_is_cached(judge: ScriptedJudge, fake_hub: Path) -> None:
    pytest.importorskip("alpaca_eval")
    task = make_task(source="hub")
    completions = [f"{MAGIC} answer" if i % 3 == 0 else "short" for i in range(12)]
    without = judge_all(task, completions)
    assert without.metrics["lc_available"] == 0.0 and "lc_win_rate" not in without.metrics
    assert without.score == without.metrics["win_rate"]
    assert summary(without)["score_metric"] == "alpaca_eval 0.6.6 win_rate (get_winrate)"
    assert LC_FILE in summary(without)["lc_note"] and summary(without)["judge_protocol"].startswith("a2rl")

    _write_df_gamed(fake_hub)
    with_lc = judge_all(make_task(source="hub"), completions)
    s = summary(with_lc)
    assert with_lc.metrics["lc_available"] == 1.0 and with_lc.metrics["score_is_lc"] == 1.0
    assert with_lc.score == with_lc.metrics["lc_win_rate"] and 0.0 <= with_lc.score <= 100.0
    assert s["score_metric"].endswith("length_controlled_winrate (glm length_controlled_v1)")
    assert len(s["lc_file_sha256"]) == 64
    assert s["alpaca_eval_version"]
    assert with_lc.metrics["win_rate"] == without.metrics["win_rate"]
    assert with_lc.metrics["judge_calls"] == 0  # all cached from the first pass


# ---- judging ---------------------------------------------------------------------------------


def test_order_randomised_and_recorded(judge: ScriptedJudge) -> None:
    task = make_task()
    out = judge_all(task, [f"{MAGIC}: my answer"] * 20)
    rows = item_rows(out)
    assert {r["response_a"] for r in rows} == {"model", "reference"}  # both orders occur
    for r in rows:
        assert {r["response_a"], r["response_b"]} == {"model", "reference"}
        assert r["response_a"] == ("model" if model_is_a(0, r["id"]) else "reference")
        assert r["verdict"] == ("A" if r["response_a"] == "model" else "B")  # verdict follows the order
        assert r["win"] == 1.0
    # the judge saw what the rows say it saw
    marker = "[The Start of Response A]\n"
    seen = {req["prompt"].split(marker, 1)[1].startswith(MAGIC) for req in judge.requests}
    assert seen == {True, False}
    assert out.score == 100.0 and out.metrics["win_rate"] == 100.0 and out.n_items == 20
    assert out.metrics["judge_calls"] == 20 and out.metrics["lc_available"] == 0.0


def test_tie_counts_half(judge: ScriptedJudge) -> None:
    task = make_task(max_heldout=4)
    items = task.heldout_items()
    # same length as the reference -> TIE; shorter -> loss; magic word -> win; identical -> tie
    # without the judge (alpaca_eval's rule for equal outputs)
    same_length = "y" * len(items[0]["reference"])
    completions = [same_length, "x", MAGIC, items[3]["reference"]]
    out = task.judge_completions(items, ["p"] * 4, completions)
    rows = item_rows(out)
    assert [r["verdict"] for r in rows][0] == "TIE" and rows[3]["verdict"] == "identical"
    assert [r["win"] for r in rows] == [0.5, 0.0, 1.0, 0.5]
    assert [r["preference"] for r in rows] == [1.5, 1.0, 2.0, 1.5]
    assert out.metrics["win_rate"] == 50.0 and out.score == 50.0
    assert (out.metrics["n_wins"], out.metrics["n_ties"], out.metrics["n_losses"]) == (1.0, 2.0, 1.0)
    assert out.metrics["n_identical"] == 1.0 and out.metrics["judge_calls"] == 3
    assert not any(items[3]["reference"] in req["prompt"] for req in judge.requests)  # never judged


@pytest.mark.parametrize("status", [500, 503, 429])
def test_transient_errors_are_retried(judge: ScriptedJudge, status: int) -> None:
    judge.fail_next, judge.fail_status, judge.retry_after = 3, status, "0"
    out = judge_all(make_task(max_heldout=2, judge_concurrency=1), ["a", "b"])
    assert out.metrics["judge_http_retries"] == 3 and out.metrics["judge_calls"] == 5
    assert all(r["verdict"] in {"A", "B", "TIE"} for r in item_rows(out))


def test_retries_give_up_with_a_clean_error(judge: ScriptedJudge, caplog: pytest.LogCaptureFixture) -> None:
    judge.fail_next = 100
    task = make_task(max_heldout=1, judge_max_retries=2)
    with pytest.raises(JudgeError) as info:
        judge_all(task, ["a"])
    assert len(judge.requests) == 3  # first attempt + 2 retries
    text = str(info.value) + caplog.text
    assert "HTTP 500" in text and SECRET not in text
    assert task.heldout_items()[0]["instruction"] not in str(info.value)  # no held-out data in errors


def test_backoff_doubles(judge: ScriptedJudge) -> None:
    judge.fail_next = 3
    delays: list[float] = []
    settings = JudgeSettings.resolve(backoff_s=1.0, max_backoff_s=3.0, max_retries=5)
    with JudgeClient(settings, sleep=delays.append) as client:
        prompt = render_judge_prompt(judge_template(), instruction="i", output_a="x", output_b="y")
        assert client.chat([{"role": "user", "content": prompt}]).strip() == "TIE."
    assert len(delays) == 3
    assert 0.8 <= delays[0] <= 1.2 and 1.6 <= delays[1] <= 2.4 and delays[2] == 3.0  # capped


def test_client_errors_are_not_retried(judge: ScriptedJudge) -> None:
    judge.fail_next, judge.fail_status = 5, 401
    with pytest.raises(JudgeError, match="HTTP 401"):
        judge_all(make_task(max_heldout=1), ["a"])
    assert len(judge.requests) == 1


def test_connection_errors_are_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    monkeypatch.setenv("A2RL_JUDGE_MODEL", JUDGE_MODEL)
    settings = JudgeSettings.resolve(base_url=f"http://127.0.0.1:{port}", max_retries=2, backoff_s=0.001)
    assert settings.endpoint == f"http://127.0.0.1:{port}/v1/chat/completions"
    with JudgeClient(settings) as client, pytest.raises(JudgeError, match="ConnectError"):
        client.chat([{"role": "user", "content": "hi"}])
    assert client.stats.requests == 3 and client.stats.http_retries == 2


def test_unconfigured_judge_fails_before_generation(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("A2RL_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("A2RL_JUDGE_MODEL", raising=False)
    with pytest.raises(JudgeError, match="A2RL_JUDGE_BASE_URL") as info:
        make_task().evaluate(tmp_path / "no-such-model", chat_template_from=None)
    assert info.value.fix and "vllm" in info.value.fix


def test_unparseable_replies_are_retried_then_left_out(judge: ScriptedJudge) -> None:
    judge.garbage_always = True
    task = make_task(max_heldout=3, parse_retries=2)
    out = judge_all(task, [MAGIC] * 3)  # would win if the judge answered properly
    rows = item_rows(out)
    assert [r["verdict"] for r in rows] == ["unparseable"] * 3
    assert all(r["win"] is None and r["preference"] is None for r in rows)
    assert all(len(r["judge_replies"]) == 3 for r in rows)
    assert out.metrics["judge_unparseable"] == 3 and out.metrics["judge_calls"] == 9
    # no verdict at all: alpaca_eval's win rate is undefined; a2rl scores 0 and says why
    assert out.score == 0.0 and out.metrics["n_scored"] == 0 and "score_note" in summary(out)
    judge.garbage_always = False
    again = judge_all(task, [MAGIC] * 3)  # unparseable verdicts were not cached
    assert again.metrics["judge_calls"] == 3 and again.score == 100.0


def test_unparseable_items_are_left_out_not_lost(judge: ScriptedJudge) -> None:
    """alpaca_eval drops items without a preference: 2 wins, 1 loss and 1 unparseable is a
    win rate of 2/3, not 2/4."""
    task = make_task(max_heldout=4, parse_retries=0, judge_concurrency=1)
    items = task.heldout_items()
    judge.garbage_next = 1  # the first request (item 0, judged first with one worker)
    out = task.judge_completions(items, ["p"] * 4, [MAGIC, MAGIC, MAGIC, "x"])
    rows = item_rows(out)
    assert rows[0]["verdict"] == "unparseable" and [r["win"] for r in rows[1:]] == [1.0, 1.0, 0.0]
    assert out.metrics["win_rate"] == pytest.approx(200 / 3) and out.metrics["n_scored"] == 3
    assert out.metrics["judge_unparseable"] == 1


def test_unparseable_reply_then_valid_one(judge: ScriptedJudge) -> None:
    judge.garbage_next = 1
    out = judge_all(make_task(max_heldout=1, judge_concurrency=1), [MAGIC])
    [row] = item_rows(out)
    assert row["verdict"] in {"A", "B"} and row["win"] == 1.0 and len(row["judge_replies"]) == 2
    assert out.metrics["judge_unparseable"] == 0 and out.metrics["judge_unparseable_replies"] == 1


def test_cache(judge: ScriptedJudge, monkeypatch: pytest.MonkeyPatch) -> None:
    task = make_task(max_heldout=8)
    completions = [MAGIC if i % 2 else "x" for i in range(8)]
    first = judge_all(task, completions)
    assert first.metrics["judge_calls"] == 8 and first.metrics["judge_cache_hits"] == 0
    second = judge_all(task, completions)
    assert second.metrics["judge_calls"] == 0 and second.metrics["judge_cache_hits"] == 8
    assert len(judge.requests) == 8
    assert [r["verdict"] for r in item_rows(second)] == [r["verdict"] for r in item_rows(first)]
    assert all(r["cached"] for r in item_rows(second))
    # another seed flips some items' order: only those are judged again (the key has the order)
    flipped = sum(model_is_a(0, i["id"]) != model_is_a(7, i["id"]) for i in task.heldout_items())
    assert 0 < flipped < 8
    assert judge_all(make_task(max_heldout=8, seed=7), completions).metrics["judge_calls"] == flipped
    # another judge model never reuses verdicts
    monkeypatch.setenv("A2RL_JUDGE_MODEL", "another-judge")
    other = judge_all(task, completions)
    assert other.metrics["judge_calls"] == 8 and judge.requests[-1]["model"] == "another-judge"


def test_key_from_env_only_and_never_recorded(judge: ScriptedJudge, caplog: pytest.LogCaptureFixture,
                                              a2rl_home: Path) -> None:
    caplog.set_level(logging.DEBUG)
    judge.fail_next = 1  # a retry gets logged too
    task = make_task(max_heldout=3)
    out = judge_all(task, ["a", MAGIC, "c"])
    assert {r["auth"] for r in judge.requests} == {f"Bearer {SECRET}"}  # sent to the judge...
    recorded = out.model_dump_json() + json.dumps(task.spec().model_dump()) + caplog.text
    recorded += task.description(chat_preview=None) + repr(JudgeClient(task.judge_settings()))
    assert "judge_calls" in recorded and SECRET not in recorded  # ...and nowhere else
    for path in a2rl_home.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    s = summary(out)
    assert s["judge_model"] == JUDGE_MODEL and s["judge_prompt_file"] == PROMPT_FILE
    assert s["judge_prompt"] == judge_template() and s["judge_prompt_sha256"] == judge_template_sha256()
    assert all(r["judge_prompt_sha256"] == judge_template_sha256() for r in item_rows(out))


def test_fingerprint_includes_judge_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2RL_JUDGE_MODEL", "judge-1")
    one = make_task().fingerprint()
    assert make_task().fingerprint() == one
    monkeypatch.setenv("A2RL_JUDGE_MODEL", "judge-2")
    assert make_task().fingerprint() != one


def test_description_explains_the_evaluation(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from a2rl.inference._chat import load_tokenizer, render_chat

    monkeypatch.setenv("A2RL_JUDGE_MODEL", JUDGE_MODEL)
    tokenizer = load_tokenizer(tiny_model)
    task = make_task()
    text = task.description(chat_preview=lambda m: render_chat(tokenizer, m))
    example = task.train_items()[0]["prompt"]
    assert render_chat(tokenizer, [{"role": "user", "content": example}]) in text
    assert judge_template().rstrip() in text and judge_template_sha256() in text
    for phrase in ("Response A", "coin flip", "exactly `A`, `B` or `TIE`", "TIE = 0.5",
                   "left out of the win rate", "exactly equal to the reference", "`get_winrate`",
                   "a2rl's own pairwise judge", "judge_protocol=a2rl",
                   "at most 512 new tokens", "greedy", "length-controlled", "raw win rate", JUDGE_MODEL,
                   "data/train.jsonl", "20 hand-written instructions"):
        assert phrase in text, phrase


# ---- the whole evaluation, as the grader runs it ---------------------------------------------


def _register_for_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Until `alpacaeval` is in BUILTIN_TASKS, let the evaluation child find it via an entry point."""
    if "alpacaeval" in BUILTIN_TASKS:
        return
    dist = tmp_path / "ep" / "a2rl_alpacaeval_test-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: a2rl-alpacaeval-test\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(
        "[a2rl.tasks]\nalpacaeval = a2rl.tasks.alpacaeval:AlpacaEvalTask\n")

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(dist.parent),
                                                                    os.environ.get("PYTHONPATH")])))


def test_full_evaluation_of_tiny_model(judge: ScriptedJudge, tiny_model: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from a2rl.grader._evaluation import EvalJob, run_evaluation

    _register_for_child(tmp_path, monkeypatch)
    params = {**FAST, "max_heldout": 4}
    job = EvalJob(task=TaskSpec(name="alpacaeval", params=params), model_dir=str(tiny_model),
                  chat_template_from=str(tiny_model), out_dir=str(tmp_path / "eval"))
    progress: list[tuple[int, int]] = []
    out = run_evaluation(job, timeout_s=300, on_progress=lambda d, t: progress.append((d, t)))
    assert out.n_items == 4 and progress[-1] == (8, 8)  # 4 generations + 4 judgements
    assert out.metrics["lc_available"] == 0.0 and out.metrics["score_is_lc"] == 0.0
    assert out.score == out.metrics["win_rate"] and out.metrics["judge_calls"] == 4
    assert len(judge.requests) == 4 and all(r["auth"] == f"Bearer {SECRET}" for r in judge.requests)
    details = [json.loads(line) for line in (tmp_path / "eval" / "details.jsonl").read_text().splitlines()]
    assert details[0]["kind"] == "summary" and details[0]["score_metric"].endswith("win_rate (get_winrate)")
    assert "offline synthetic set" in details[0]["lc_note"]
    rows = details[1:]
    assert len(rows) == 4 and all(r["prompt"].startswith("<|im_start|>") for r in rows)
    for r in rows:  # the scripted rule, re-applied to what was recorded
        model_out, ref = r["completion"], r["reference"]
        expect = 0.5 if len(model_out) == len(ref) else float(len(model_out) > len(ref))
        assert r["win"] == (1.0 if MAGIC in model_out else expect)
    for f in (tmp_path / "eval").iterdir():
        assert SECRET not in f.read_text(errors="replace"), f.name


def test_alpaca_eval_protocol_is_the_default_and_needs_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    from a2rl.tasks.alpacaeval import annotator

    monkeypatch.setenv("A2RL_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("A2RL_JUDGE_MODEL", JUDGE_MODEL)
    task = AlpacaEvalTask({"source": "offline"})
    assert task.params.judge_protocol == "alpaca_eval"
    text = task.description(chat_preview=None)
    assert annotator.ANNOTATOR in text and annotator.template().rstrip() in text
    assert "log-probabilities" in text
    # another protocol is another evaluation: its fingerprint differs
    assert task.fingerprint() != AlpacaEvalTask({"source": "offline", "judge_protocol": "a2rl"}).fingerprint()
    monkeypatch.setattr(annotator, "available", lambda: False)
    with pytest.raises(A2RLError, match="alpaca_eval package") as info:
        task.judge_settings()
    assert info.value.fix and "judge_protocol=a2rl" in info.value.fix
