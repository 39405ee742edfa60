"""deepsearchqa: the ReAct action parser, the BM25 and web search backends, the generated offline
worlds (multi-hop; a held-out world from the secret seed), the string fallback grader, a
scripted-engine rollout that searches twice before answering, the LLM judge against a scripted
OpenAI-compatible server on loopback, the hub source (offline error, cached file, seeded split),
the description, and a real evaluation of the tiny model."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from a2rl import A2RLError
from a2rl.envs import Episode, run_rollouts
from a2rl.inference import GenerationSettings
from a2rl.inference._engine import cut_at_stop
from a2rl.tasks.deepsearchqa.answer_grader import judge_template, render_judge_prompt
from a2rl.tasks.deepsearchqa.grading import SET, SINGLE, canonical_tokens, string_grade
from a2rl.tasks.deepsearchqa.react import parse_action
from a2rl.tasks.deepsearchqa.search import (
    BM25CorpusBackend,
    Document,
    SearchError,
    WebSearchBackend,
    format_results,
    parse_corpus,
    parse_web_results,
)
from a2rl.tasks.deepsearchqa.sources import HUB_FILE, HUB_REPO, N_HELDOUT, N_TRAIN, load_hub_rows, split_hub
from a2rl.tasks.deepsearchqa.task import MAX_STEPS, STOP, DeepSearchQAParams, DeepSearchQATask
from conftest import serve_on_loopback

REPO = Path(__file__).resolve().parent.parent.parent
DATA = REPO / "src" / "a2rl" / "tasks" / "deepsearchqa" / "data"
SECRET = "sk-test-dsqa-0ff1ce-do-not-leak"
SEARCH_SECRET = "search-key-5ec2e7-do-not-leak"
JUDGE_MODEL = "scripted-judge"
FAST_JUDGE = {"judge_backoff_s": 0.001, "judge_max_backoff_s": 0.01}


def offline(**params: Any) -> DeepSearchQATask:
    return DeepSearchQATask({"source": "offline", **params})


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ---- the action parser -----------------------------------------------------------------------


@pytest.mark.parametrize(("completion", "expected"), [
    ("Thought: find the firm.\nAction: search[Teinsona Instruments]", "search[Teinsona Instruments]"),
    ("Action: answer[Gurhe]", "answer[Gurhe]"),
    ("Thought: done\nAction: Answer[ A;  B ]\n", "answer[A; B]"),
    ("action:search [ founder of X ]", "search[founder of X]"),
    ("**Action:** search[X]", "search[X]"),
    # the first action wins, whatever follows it
    ("Action: search[first]\nAction: answer[second]", "search[first]"),
    ("Action: answer[it]\nObservation: made up\nAction: search[more]", "answer[it]"),
    # nested brackets, multi-line answers, an unclosed bracket (token limit) takes its line
    ("Action: answer[Foo [bar] baz]", "answer[Foo [bar] baz]"),
    ("Action: answer[A;\nB;\nC]", "answer[A; B; C]"),
    ("Action: search[truncated query\nmore text", "search[truncated query]"),
    # an empty search is skipped; an empty answer is an (empty) answer
    ("Action: search[]\nAction: search[real]", "search[real]"),
    ("Action: answer[]", "answer[]"),
    # junk
    ("I think the answer is Gurhe.", None),
    ("Action: lookup[Gurhe]", None),
    ("research[X] and answers[Y]", None),
    ("Action: search[ ]", None),
    ("", None),
])
def test_parse_action(completion: str, expected: str | None) -> None:
    assert parse_action(completion) == expected


def test_stop_strings_end_generation_after_the_action() -> None:
    """Unlike public code that stops at "\\nAction:" (so the search tool is never used), the stop
    string comes after the action: a cut completion still holds it."""
    task = offline()
    stop = task.rollout.generation.stop
    assert stop == STOP and "\nObservation:" in stop and not any("Action" in s for s in stop)
    raw = "Thought: look it up\nAction: search[Gurhe river]\nObservation: the Gurhe flows..."
    cut = cut_at_stop(raw, stop)
    assert cut == "Thought: look it up\nAction: search[Gurhe river]"
    assert task.parse_action(cut) == "search[Gurhe river]"
    assert task.rollout.max_steps == MAX_STEPS == 8


# ---- search backends -------------------------------------------------------------------------


def test_bm25_finds_the_right_document() -> None:
    docs = [Document("d1", "Velmora Instruments", "Velmora Instruments was founded by Oskar Trent in 1931."),
            Document("d2", "Oskar Trent", "Oskar Trent was born in the town of Brisk Hollow."),
            Document("d3", "Brisk Hollow", "Brisk Hollow is a town on the Seluna River.", url="http://x/bh")]
    bm25 = BM25CorpusBackend(docs, snippet_chars=40)
    assert [r["id"] for r in bm25.search("Where was Oskar Trent born?", 3)][0] == "d2"
    hits = bm25.search("founder of Velmora Instruments", 3)
    assert [h["id"] for h in hits] == ["d1"]  # documents sharing no term are not returned
    assert hits[0]["title"] == "Velmora Instruments" and hits[0]["url"] == ""
    assert bm25.search("Seluna", 1)[0]["url"] == "http://x/bh"
    assert bm25.search("the of a", 3) == [] and bm25.search("", 3) == [] and bm25.search("zzzq", 3) == []
    long = bm25.search("Oskar Trent Brisk Hollow", 1)[0]["snippet"]
    assert len(long) <= 42 and long.endswith("…")
    assert bm25.search("Oskar Trent", 50) == bm25.search("Oskar Trent", 50)  # k above the corpus size
    text = format_results(bm25.search("Seluna River", 2))
    assert text.startswith("[1] Brisk Hollow (http://x/bh)\n") and format_results([]) == "No results."


def test_bm25_on_the_offline_corpus_is_deterministic(tmp_path: Path) -> None:
    corpus = read_jsonl(DATA / "corpus.jsonl")
    companies = [d for d in corpus if d["id"].startswith("company-")]
    backend = offline().make_backend()
    for d in companies[:10]:
        assert backend.search(d["title"], 5)[0]["id"] == d["id"]
    first = [backend.search(d["title"] + " headquarters founder", 5) for d in companies]
    again = offline().make_backend()
    assert first == [again.search(d["title"] + " headquarters founder", 5) for d in companies]
    # a JSONL corpus file gives the same backend
    path = tmp_path / "corpus.jsonl"
    path.write_text((DATA / "corpus.jsonl").read_text())
    from_file = offline(corpus_path=str(path)).make_backend()
    assert from_file.search(companies[0]["title"], 5) == backend.search(companies[0]["title"], 5)
    assert from_file.describe()["corpus_sha256"] == backend.describe()["corpus_sha256"]


def test_corpus_errors() -> None:
    with pytest.raises(SearchError, match="line 2"):
        parse_corpus(['{"id": "a", "text": "x"}', "not json"], "c")
    with pytest.raises(SearchError, match="string `text`"):
        parse_corpus(['{"id": "a"}'], "c")
    with pytest.raises(SearchError, match="empty"):
        parse_corpus(["", "  "], "c")
    with pytest.raises(SearchError, match="corpus_path"):
        BM25CorpusBackend.from_jsonl(Path("/no/such/corpus.jsonl"))


def test_web_results_shapes() -> None:
    tavily = {"results": [{"title": "T", "url": "https://a", "content": "c1"}]}
    serper = {"organic": [{"title": "T", "link": "https://a", "snippet": "c1"}]}
    brave = {"web": {"results": [{"title": "T", "url": "https://a", "description": "c1"}]}}
    expected = [{"title": "T", "id": "https://a", "url": "https://a", "snippet": "c1"}]
    for payload in (tavily, serper, brave, tavily["results"]):
        assert parse_web_results(payload) == expected
    assert parse_web_results({"results": [{"url": "https://empty"}, "junk"]}) == []
    with pytest.raises(ValueError):
        parse_web_results({"answer": "no list"})


# ---- a scripted OpenAI-compatible judge and a scripted search API, on loopback ----------------

_GOLD = re.compile(r"<answer>\n(.*?)\n</answer>.*<response>\n(.*?)\n</response>", re.S)


@dataclass
class Scripted:
    """Judge rule: each comma-separated gold item is found when it appears in the prediction
    (case-insensitive); a prediction naming none of them is one excessive answer. The reply is
    the starter code's JSON. Search: a fixed result list. Either can be told to fail or (the
    judge) to reply with prose for the next N requests."""

    fail_next: int = 0
    fail_status: int = 500
    garbage_next: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    searches: list[dict[str, Any]] = field(default_factory=list)
    search_fail_next: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def verdict(prompt: str) -> str:
        m = _GOLD.search(prompt)
        assert m, "the judge prompt does not have the expected sections"
        gold, pred = m.group(1), m.group(2).lower()
        found = {g.strip(): g.strip().lower() in pred for g in gold.split(",")}
        extra = [] if any(found.values()) else [m.group(2)]
        return json.dumps({"explanation": "scripted", "correctness_details": found,
                           "excessive_answers": extra})

    def judge(self, body: dict[str, Any], auth: str | None) -> tuple[int, dict[str, Any]]:
        prompt = body["messages"][-1]["content"]
        with self.lock:
            self.requests.append({"model": body["model"], "auth": auth, "prompt": prompt})
            if self.fail_next > 0:
                self.fail_next -= 1
                return self.fail_status, {"error": {"message": "scripted failure"}}
            garbage = self.garbage_next > 0
            self.garbage_next -= int(garbage)
        text = "I believe the prediction is correct." if garbage else f"```json\n{self.verdict(prompt)}\n```"
        return 200, {"id": "x", "object": "chat.completion", "model": body["model"],
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": text}}]}

    def search(self, body: dict[str, Any], auth: str | None) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.searches.append({"body": body, "auth": auth})
            if self.search_fail_next > 0:
                self.search_fail_next -= 1
                return 503, {"error": "busy"}
        n = int(body["max_results"])
        return 200, {"results": [{"title": f"Result {i} for {body['query']}", "url": f"https://ex.org/{i}",
                                  "content": "word " * 100} for i in range(n + 2)]}


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Scripted]:
    state = Scripted()
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        status, payload = state.judge(await request.json(), request.headers.get("authorization"))
        return JSONResponse(payload, status_code=status)

    @app.post("/search")
    async def search(request: Request) -> JSONResponse:
        status, payload = state.search(await request.json(), request.headers.get("authorization"))
        return JSONResponse(payload, status_code=status)

    with serve_on_loopback(app) as port:
        monkeypatch.setenv("A2RL_JUDGE_BASE_URL", f"http://127.0.0.1:{port}/v1")
        monkeypatch.setenv("A2RL_JUDGE_MODEL", JUDGE_MODEL)
        monkeypatch.setenv("A2RL_JUDGE_API_KEY", SECRET)
        monkeypatch.setenv("A2RL_SEARCH_API_URL", f"http://127.0.0.1:{port}/search")
        monkeypatch.setenv("A2RL_SEARCH_API_KEY", SEARCH_SECRET)
        yield state


def test_web_search_backend(scripted: Scripted, a2rl_home: Path) -> None:
    scripted.search_fail_next = 1  # one 503, retried
    web = WebSearchBackend(snippet_chars=50, backoff_s=0.001)
    try:
        hits = web.search("capital of Nowhere", 3)
        assert len(hits) == 3 and hits[0]["url"] == "https://ex.org/0" and len(hits[0]["snippet"]) <= 52
        assert scripted.searches[-1]["body"] == {"query": "capital of Nowhere", "max_results": 3}
        assert scripted.searches[-1]["auth"] == f"Bearer {SEARCH_SECRET}"
        assert web.search("capital of Nowhere", 3) == hits  # from the cache
        assert len(scripted.searches) == 2 and web.requests == 2 and web.cache_hits == 1
        assert SEARCH_SECRET not in repr(web) + json.dumps(web.describe())
    finally:
        web.close()
    scripted.search_fail_next = 10
    failing = WebSearchBackend(max_retries=1, backoff_s=0.001, cache=False)
    try:
        with pytest.raises(SearchError, match="failed 2 times") as info:
            failing.search("secret held-out question", 2)
        assert "held-out" not in str(info.value) and SEARCH_SECRET not in str(info.value)
    finally:
        failing.close()
    for path in a2rl_home.rglob("*"):
        if path.is_file():
            assert SEARCH_SECRET.encode() not in path.read_bytes(), path
    # the task picks the web backend on its own for the hub source when the API is configured
    task = DeepSearchQATask({"source": "hub"})
    assert task.search_kind() == "web" and task.collection_text() == "the web"


def test_search_key_is_not_a_param() -> None:
    with pytest.raises(ValidationError):
        DeepSearchQAParams(search_api_key="x")  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        DeepSearchQAParams(judge_api_key="x")  # type: ignore[call-arg]


# ---- the offline world -----------------------------------------------------------------------


def test_offline_data_is_generated_deterministically() -> None:
    out = subprocess.run([sys.executable, "-m", "a2rl.tasks.deepsearchqa.make_data", "--check"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_offline_questions_are_multi_hop() -> None:
    docs = {d["id"]: d for d in read_jsonl(DATA / "corpus.jsonl")}
    questions = read_jsonl(DATA / "questions.jsonl")
    assert {q["answer_type"] for q in questions} == {SINGLE, SET}

    def canon(text: str) -> str:
        return f" {' '.join(canonical_tokens(text))} "

    def has(canonical_text: str, item: str) -> bool:
        return canon(item) in canonical_text

    # Each document's canonical text once (recomputed per question this check took 7 minutes).
    titled = {i: canon(d["title"] + " " + d["text"]) for i, d in docs.items()}
    body = {i: canon(d["text"]) for i, d in docs.items()}
    for q in questions:
        items = q["answer_items"]
        assert q["hops"] >= 2 and len(q["support"]) >= 2, q["id"]
        assert not any(has(canon(q["question"]), i) for i in items), q["id"]
        # no document that names the question's entity holds the whole answer: one search for
        # the entity is never enough
        for i in docs:
            if has(titled[i], q["anchor"]):
                assert not all(has(body[i], item) for item in items), (q["id"], i)
        # ...and no single document holds it together with the entity, while the supporting
        # documents together hold every item
        support = canon(" ".join(docs[s]["text"] for s in q["support"]))
        assert all(has(support, i) for i in items), q["id"]
        if q["answer_type"] == SINGLE:
            assert len(items) == 1 and q["answer"] == items[0]
        else:
            assert len(items) >= 2


def test_offline_splits_are_disjoint(tmp_path: Path) -> None:
    task = offline()
    train, held = task.train_episodes(), task.heldout_episodes()
    assert len(train) == 192 and len(held) == 60
    assert {e.split for e in train} == {"train"} and {e.split for e in held} == {"heldout"}
    assert not {e.id for e in train} & {e.id for e in held}
    assert not {e.payload["question"] for e in train} & {e.payload["question"] for e in held}
    assert {e.payload["answer_type"] for e in held} == {SINGLE, SET}
    [path] = task.write_train_data(tmp_path / "data")
    written = path.read_text()
    assert len(written.splitlines()) == len(train)
    for e in held:
        assert e.id not in written and e.payload["question"] not in written
    assert len(offline(max_heldout=2).heldout_episodes()) == 2


def test_offline_heldout_world_is_secret_and_independent(a2rl_home: Path) -> None:
    """The held-out questions come from a second world drawn from the installation's secret
    seed: no held-out entity, answer or question is in the package (so neither reading the
    package nor taking the complement of the train questions reveals them), another seed gives
    another world, and the seed never appears in the params (they go into run.json)."""
    package = "".join((DATA / n).read_text(encoding="utf-8") for n in ("corpus.jsonl", "questions.jsonl"))
    task = offline()
    held = task.heldout_episodes()
    assert task.spec().params["heldout_seed"] is None
    assert "heldout_seed" not in DeepSearchQAParams(source="offline", heldout_seed=5).public()
    assert (a2rl_home / "secrets" / "deepsearchqa-heldout-seed").is_file()
    for e in held:
        assert e.payload["anchor"] not in package, e.id
        assert not any(item in package for item in e.payload["answer_items"]), e.id
    # every train-world question is train-visible, and none is a held-out question: the
    # complement of the train set in the train world's question space is empty
    shipped = {json.loads(line)["question"] for line in (DATA / "questions.jsonl").read_text().splitlines()}
    assert len(shipped) == 192 and not shipped & {e.payload["question"] for e in held}
    # the same installation gives the same world; another seed another one
    assert [e.payload for e in offline().heldout_episodes()] == [e.payload for e in held]
    other = offline(heldout_seed=12345).heldout_episodes()
    assert {e.payload["anchor"] for e in other}.isdisjoint({e.payload["anchor"] for e in held})
    with pytest.raises(ValueError, match="must differ"):
        offline(heldout_seed=20251).heldout_episodes()
    # held-out episodes are searched in the held-out world's own documents
    env = task.make_env(held[0])
    try:
        observation = env.step(f"search[{held[0].payload['anchor']}]").observation
    finally:
        task.close()
    assert held[0].payload["anchor"] in observation


def test_sandbox_hooks_name_package_files() -> None:
    masked = DeepSearchQATask.sandbox_masked_paths()
    visible = DeepSearchQATask.sandbox_visible_paths()
    assert [p.name for p in masked] == ["questions.jsonl"] and [p.name for p in visible] == ["corpus.jsonl"]
    assert all(p.is_file() and p.resolve() == (DATA / p.name).resolve() for p in masked + visible)


# ---- grading ---------------------------------------------------------------------------------


def test_string_fallback() -> None:
    def ok(pred: str, gold: list[str]) -> bool:
        return string_grade(pred, gold).fully_correct

    assert ok("Gurhe", ["Gurhe"]) and ok("It is the town of GURHE.", ["Gurhe"])
    assert ok("Seluna river", ["the Seluna River"]) and ok("Zürich", ["Zurich"])
    assert not ok("Gurhestead", ["Gurhe"])  # whole words only
    for empty in ("", "   ", "...", "the"):  # an empty prediction is never correct
        assert not ok(empty, ["Gurhe"])
    items = ["Pamwei chronometer", "Nendwasta sextant", "Perfalgi compass"]
    assert ok("Perfalgi compass; Pamwei chronometer; Nendwasta sextant", items)
    assert not ok("Pamwei chronometer; Nendwasta sextant", items)  # sets need every item
    assert not ok("Gurhe, Seluna, Pamwei, Teinsona", ["Gurhe"])  # listing candidates adds extra items
    # a unit spelled out, an acronym, a clause about the answer; a wrong amount stays wrong
    assert ok("It spans 410 metres", ["410 m"]) and not ok("401 metres", ["410 m"])
    assert ok("TIC", ["Teinsona Instruments Company"]) and not ok("TIK", ["Teinsona Instruments Company"])
    assert ok("Gurhe, which lies on the Seluna", ["Gurhe"]) and not ok("Gurhe, and also Seluna", ["Gurhe"])


def test_judge_prompt_rendering() -> None:
    template = judge_template()
    assert set(re.findall(r"\{(\w+)\}", template)) == {"question", "answer_type", "gold_answer",
                                                         "predicted_answer"}
    text = render_judge_prompt(template, question="Q {gold_answer}", answer_type=SET, gold_answer="A, B",
                               predicted_answer="{question} }{")
    assert "Q {gold_answer}" in text and "{question} }{" in text and "<answer>\nA, B\n</answer>" in text
    assert "correctness_details" in template and "excessive_answers" in template


# ---- rollouts --------------------------------------------------------------------------------


class MultiHopEngine:
    """Answers `founder_birthplace` questions the way a search agent should: search the company,
    read the founder's name in the results, search the founder, read the birthplace, answer.
    Each completion goes on to invent an observation, which the stop string must cut off."""

    backend = "scripted"

    def __init__(self, wrong: bool = False) -> None:
        self.wrong = wrong
        self.calls: list[int] = []

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str:
        return "\n".join(f"<{m['role']}>{m['content']}" for m in messages)

    def act(self, prompt: str) -> str:
        company = re.search(r"Question: In which town was the founder of (.+?) born\?", prompt)
        assert company, "not a founder_birthplace question"
        observations = prompt.split("<user>Observation:")[1:]
        if not observations:
            return f"Thought: first find the company.\nAction: search[{company[1]}]"
        if len(observations) == 1:
            founder = re.search(r"founded in \d+ by ([A-Z]\w+ [A-Z]\w+)\.", observations[0])
            assert founder, observations[0]
            return f"Thought: the founder is {founder[1]}.\nAction: search[{founder[1]}]"
        last = re.findall(r"Thought: the founder is [A-Z]\w+ ([A-Z]\w+)\.", prompt)[-1]
        town = re.search(rf"{last} was born in (\w+)", observations[-1])
        assert town, observations[-1]
        return f"Thought: found it.\nAction: answer[{'Nowhere' if self.wrong else town[1]}]"

    def generate(self, prompts: Sequence[str], settings: GenerationSettings,
                 on_progress: Any = None) -> list[str]:
        self.calls.append(len(prompts))
        # the invented observation after the action is what a real engine's stop string cuts
        invented = "\nObservation: [1] invented result"
        return [cut_at_stop(self.act(p) + invented, settings.stop) for p in prompts]

    def close(self) -> None: ...


def founder_episodes(task: DeepSearchQATask, split: str = "train") -> list[Episode]:
    eps = task.train_episodes() if split == "train" else task.heldout_episodes()
    return [e for e in eps if e.payload["template"] == "founder_birthplace"]


def test_scripted_rollout_searches_twice_then_answers() -> None:
    task = offline(judge="string")
    episodes = founder_episodes(task)
    assert len(episodes) >= 10
    engine = MultiHopEngine()
    try:
        trajs = run_rollouts(engine, episodes, task.make_env, task.messages, task.parse_action, task.finish,
                             task.rollout, task=task.name)
    finally:
        task.close()
    assert engine.calls == [len(episodes)] * 3  # lockstep: one batched generation per step
    for t, e in zip(trajs, episodes, strict=True):
        assert [s.action.split("[")[0] for s in t.steps if s.action] == ["search", "search", "answer"]
        assert t.steps[-1].action == f"answer[{e.payload['answer']}]"
        assert t.reward == 1.0 and t.success and t.finished and t.steps[-1].reward == 1.0
        assert all("invented" not in s.completion for s in t.steps)
        assert t.steps[1].observation.startswith("Observation:\n[1] ")
        assert t.messages[0]["role"] == "user" and "Action: search[<query>]" in t.messages[0]["content"]
    wrong = offline(judge="string")
    try:
        bad = run_rollouts(MultiHopEngine(wrong=True), founder_episodes(wrong)[:3], wrong.make_env,
                           wrong.messages, wrong.parse_action, wrong.finish, wrong.rollout, task=wrong.name)
    finally:
        wrong.close()
    assert [t.reward for t in bad] == [0.0] * 3 and all(t.finished and not t.success for t in bad)


def test_unparseable_and_step_limit_end_without_credit() -> None:
    class Babbler(MultiHopEngine):
        def generate(self, prompts: Sequence[str], settings: GenerationSettings, on_progress: Any = None
                     ) -> list[str]:
            return ["I do not know." if "Flip" in p else "Action: search[again]" for p in prompts]

    task = offline(judge="string")
    eps = founder_episodes(task)[:2]
    eps[0] = Episode(id="flip", split="train", payload={**eps[0].payload, "question": "Flip?"})
    try:
        trajs = run_rollouts(Babbler(), eps, task.make_env, task.messages, task.parse_action, task.finish,
                             task.rollout, task=task.name)
    finally:
        task.close()
    assert len(trajs[0].steps) == 1 and trajs[0].steps[0].action is None and trajs[0].reward == 0.0
    assert len(trajs[1].steps) == MAX_STEPS and not trajs[1].finished and trajs[1].reward == 0.0
    assert "one action left" in trajs[1].steps[-1].observation


# ---- the judge path ------------------------------------------------------------------------------


@pytest.fixture
def scripted_engine(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Make `load_engine` (used by evaluate/collect) return a MultiHopEngine."""
    import a2rl.inference

    holder: dict[str, Any] = {"wrong": False}

    def fake_load_engine(model_dir: Path, **kwargs: Any) -> MultiHopEngine:
        holder["engine"] = MultiHopEngine(wrong=holder["wrong"])
        return holder["engine"]

    monkeypatch.setattr(a2rl.inference, "load_engine", fake_load_engine)
    return holder


class FounderOnly(DeepSearchQATask):
    """The offline task restricted to the questions MultiHopEngine can answer."""

    def heldout_episodes(self) -> list[Episode]:
        return founder_episodes(offline(), "heldout")[: self.params.max_heldout or 4]


def test_judge_path(scripted: Scripted, scripted_engine: dict[str, Any], tmp_path: Path) -> None:
    scripted.fail_next = 1  # an HTTP 500, retried
    scripted.garbage_next = 1  # one reply that is not a verdict, asked again
    task = FounderOnly({"source": "offline", "max_heldout": 3, "search": "corpus", **FAST_JUDGE})
    assert task.grader_mode() == "llm"
    out = task.evaluate(tmp_path / "model", chat_template_from=None)
    assert out.score == 100.0 and out.n_items == 3
    m = out.metrics
    assert m["grader_llm"] == 1.0 and m["accuracy"] == 100.0 and m["mean_searches"] == 2.0
    assert m["judge_calls"] == 5 and m["judge_http_retries"] == 1 and m["judge_unparseable"] == 0
    assert all(r["auth"] == f"Bearer {SECRET}" and r["model"] == JUDGE_MODEL for r in scripted.requests)
    assert "Answer type: Single Answer\n" in scripted.requests[-1]["prompt"]
    summary, *rows = out.details
    assert summary["kind"] == "summary" and summary["grader"] == "llm"
    assert summary["judge_model"] == JUDGE_MODEL
    assert summary["search"]["backend"] == "corpus" and summary["score_metric"].startswith("fully_correct")
    assert summary["search"]["corpus"] == "a2rl offline held-out corpus"
    assert [r["verdict"] for r in rows] == ["fully_correct"] * 3
    assert all(len(r["searches"]) == 2 for r in rows)
    assert m["f1"] == m["precision"] == m["recall"] == 100.0 and m["fully_incorrect"] == 0.0
    assert SECRET not in json.dumps(out.model_dump()) and SEARCH_SECRET not in json.dumps(out.model_dump())
    # wrong answers: judged incorrect (new predictions, so not from the cache)
    scripted_engine["wrong"] = True
    bad = FounderOnly({"source": "offline", "max_heldout": 3, "search": "corpus", **FAST_JUDGE})
    out = bad.evaluate(tmp_path / "model", chat_template_from=None)
    assert out.score == 0.0 and [r["verdict"] for r in out.details[1:]] == ["fully_incorrect"] * 3
    assert out.metrics["fully_incorrect"] == 100.0 and out.metrics["f1"] == 0.0
    # the right answers again: all from the judgement cache
    scripted_engine["wrong"] = False
    again = FounderOnly({"source": "offline", "max_heldout": 3, "search": "corpus", **FAST_JUDGE})
    out = again.evaluate(tmp_path / "model", chat_template_from=None)
    assert out.score == 100.0 and out.metrics["judge_calls"] == 0 and out.metrics["judge_cache_hits"] == 3


def test_judge_string_mode_and_empty_answers(scripted: Scripted, scripted_engine: dict[str, Any],
                                             tmp_path: Path) -> None:
    task = FounderOnly({"source": "offline", "max_heldout": 2, "judge": "string"})
    out = task.evaluate(tmp_path / "model", chat_template_from=None)
    assert out.score == 100.0 and out.metrics["grader_llm"] == 0.0 and out.metrics["judge_calls"] == 0
    assert not scripted.requests and out.details[0]["grader"] == "string"
    # an empty answer never reaches the judge and is never correct
    from a2rl.tasks.deepsearchqa.answer_grader import AnswerGrader

    llm = offline(**FAST_JUDGE)
    grader = AnswerGrader("llm", settings=llm.judge_settings())
    try:
        payload = offline().heldout_episodes()[0].payload
        v = grader.grade(payload, "  ")
        assert not v.correct and v.verdict == "empty" and not scripted.requests
        assert grader.grade(payload, payload["answer"]).correct and len(scripted.requests) == 1
    finally:
        grader.close()


def test_unconfigured_llm_judge_fails_before_the_model_loads(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    monkeypatch.delenv("A2RL_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("A2RL_JUDGE_MODEL", raising=False)
    assert offline().grader_mode() == "string"  # auto without a judge
    with pytest.raises(A2RLError, match="A2RL_JUDGE_BASE_URL"):
        offline(judge="llm").evaluate(tmp_path / "no-such-model", chat_template_from=None)


def test_fingerprint_follows_grader_and_search(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("A2RL_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("A2RL_JUDGE_MODEL", raising=False)
    base = offline().fingerprint()
    assert offline().fingerprint() == base and offline(judge="string").fingerprint() != base
    monkeypatch.setenv("A2RL_JUDGE_MODEL", "judge-1")
    one = offline().fingerprint()
    monkeypatch.setenv("A2RL_JUDGE_MODEL", "judge-2")
    assert one != base and offline().fingerprint() != one
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "title": "A", "text": "alpha"}\n')
    assert offline(corpus_path=str(corpus)).fingerprint() != offline().fingerprint()


def test_fingerprint_follows_the_string_grader_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scores of the string grader change with its rules, so its version keys the fingerprint."""
    import a2rl.tasks.deepsearchqa.task as task_module

    monkeypatch.delenv("A2RL_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("A2RL_JUDGE_MODEL", raising=False)
    before = offline(judge="string").fingerprint()
    monkeypatch.setattr(task_module, "STRING_GRADER_VERSION", task_module.STRING_GRADER_VERSION + 1)
    assert offline(judge="string").fingerprint() != before
    monkeypatch.setenv("A2RL_JUDGE_MODEL", "judge-1")
    judged = offline().fingerprint()
    monkeypatch.setattr(task_module, "STRING_GRADER_VERSION", task_module.STRING_GRADER_VERSION + 1)
    assert offline().fingerprint() == judged  # a judge's scores do not depend on it


# ---- the hub source --------------------------------------------------------------------------


def test_hub_source_offline_raises_a2rl_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hf-cache"))
    task = DeepSearchQATask({"source": "hub", "corpus_path": "x.jsonl"})
    with pytest.raises(A2RLError) as info:
        task.heldout_episodes()
    assert HUB_FILE in info.value.message and info.value.fix and "source=offline" in info.value.fix
    with pytest.raises(A2RLError):
        task.write_train_data(tmp_path / "data")
    assert DeepSearchQAParams().source == "hub"  # the default


def _fake_hub_csv(cache: Path, n: int) -> Path:
    """Place a DSQA-full.csv where hf_hub_download(local_files_only=True) looks for it."""
    import csv

    root = cache / f"datasets--{HUB_REPO.replace('/', '--')}"
    commit = "0" * 40
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(commit)
    path = root / "snapshots" / commit / HUB_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["example_id", "problem", "problem_category", "answer", "answer_type"])
        for i in range(n):
            kind = "Set Answer" if i % 3 == 0 else "Single Answer"
            answer = f"Item {i}a, Item {i}b, Item {i}c" if kind == "Set Answer" else f"Answer {i}"
            w.writerow([i, f"Question number {i}?", "Geography", answer if i != 7 else "", kind])
    return path


def test_hub_source_from_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = tmp_path / "hf-cache"
    path = _fake_hub_csv(cache, 321)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("A2RL_SEARCH_API_URL", raising=False)
    rows = load_hub_rows(path)
    assert len(rows) == 320  # the row without an answer is dropped
    task = DeepSearchQATask({"source": "hub", "corpus_path": str(DATA / "corpus.jsonl")})
    train, held = task.train_episodes(), task.heldout_episodes()
    assert len(train) == N_TRAIN == 100 and len(held) == N_HELDOUT == 200
    assert not {e.id for e in train} & {e.id for e in held}
    # the split does not depend on the file's row order
    rtrain, rheld = split_hub(list(reversed(rows)))
    assert [r["id"] for r in rheld] == [e.id for e in held]
    assert [r["id"] for r in rtrain] == [e.id for e in train]
    s = next(e for e in held if e.payload["answer_type"] == SET)
    assert len(s.payload["answer_items"]) == 3 and s.payload["category"] == "Geography"
    [written] = task.write_train_data(tmp_path / "data")
    text = written.read_text()
    assert all(e.id + '"' not in text for e in held)
    capped = DeepSearchQATask({"source": "hub", "max_heldout": 5, "corpus_path": "x"})
    assert capped.heldout_episodes() == held[:5]
    # without a web API or a corpus the hub source has nothing to search
    with pytest.raises(SearchError) as info:
        DeepSearchQATask({"source": "hub"}).search_kind()
    assert info.value.fix and "corpus_path" in info.value.fix and "A2RL_SEARCH_API_URL" in info.value.fix


# ---- description and a real evaluation ---------------------------------------------------------


def test_description_shows_the_rendered_prompt(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from a2rl.inference._chat import load_tokenizer, render_chat

    monkeypatch.delenv("A2RL_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("A2RL_JUDGE_MODEL", raising=False)
    tokenizer = load_tokenizer(tiny_model)
    task = offline()
    text = task.description(chat_preview=lambda m: render_chat(tokenizer, m))
    ep = task.train_episodes()[0]
    first = task.make_env(ep).reset()
    task.close()
    assert render_chat(tokenizer, [{"role": "user", "content": first}]) in text
    assert ep.payload["question"] in text
    for phrase in ("search[<query>]", "answer[<final answer>]", "\\nObservation:", "**first**", "greedily",
                   f"at most {MAX_STEPS}", "top\n  5 results", "string grader", "never correct",
                   "fully correct", "precision", "`99,354` = `99354`", "Barcelona or Madrid",
                   "secret seed", "data/episodes.jsonl", "60 held-out"):
        assert phrase in text, phrase
    monkeypatch.setenv("A2RL_JUDGE_MODEL", JUDGE_MODEL)
    monkeypatch.setenv("A2RL_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    judged = offline().description(chat_preview=None)
    assert judge_template().rstrip() in judged and JUDGE_MODEL in judged and "starter code" in judged


def test_evaluate_tiny_model(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("A2RL_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("A2RL_JUDGE_MODEL", raising=False)
    task = offline(max_heldout=2)
    progress: list[tuple[int, int]] = []
    out = task.evaluate(tiny_model, chat_template_from=tiny_model,
                        on_progress=lambda d, t: progress.append((d, t)))
    assert out.n_items == 2 and 0.0 <= out.score <= 100.0 and progress[-1] == (2, 2)
    for key in ("success_rate", "mean_reward", "mean_steps", "accuracy", "grader_llm", "answered_rate",
                "mean_searches", "judge_calls", "fully_correct", "precision", "recall", "f1",
                "fully_incorrect", "correct_with_extraneous"):
        assert key in out.metrics, key
    assert out.metrics["grader_llm"] == 0.0 and out.details[0]["grader"] == "string"
    assert [d["episode_id"] for d in out.details[1:]] == [e.id for e in task.heldout_episodes()]
    assert task._session is None  # the backend and the grader were released


@pytest.mark.parametrize(("prediction", "gold", "fully_correct"), [
    ("Not 1990; it was 1991", "1990", False),  # the hedge rejects the gold: no credit
    ("Not 1990; it was 1991", "1991", True),
    ("It wasn't 1990, it was 1991", "1990", False),
    ("It wasn't 1990, it was 1991", "1991", True),
    ("It was not Paris but Lyon", "Paris", False),
    ("It was not Paris but Lyon", "Lyon", True),
    ("Paris, not Lyon", "Lyon", False),
    ("Paris, not Lyon", "Paris", True),
    ("Lyon rather than Paris", "Paris", False),
    ("Lyon rather than Paris", "Lyon", True),
    ("The answer is 1991, not 1990.", "1990", False),
    ("The answer is 1991, not 1990.", "1991", True),
    ("Neither Paris nor Lyon; Marseille", "Paris", False),
    ("Neither Paris nor Lyon; Marseille", "Marseille", True),
    ("Not Fade Away", "Not Fade Away", True),  # a negator inside the answer itself
])
def test_a_rejected_candidate_is_not_the_answer(prediction: str, gold: str,
                                                fully_correct: bool) -> None:
    assert string_grade(prediction, [gold]).fully_correct is fully_correct


def test_not_only_affirms_both_items() -> None:
    out = string_grade("not only Paris but also Lyon", ["Paris", "Lyon"])
    assert out.fully_correct
