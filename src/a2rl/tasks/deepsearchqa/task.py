"""`deepsearchqa` (L3, judge reward): a ReAct search agent answering multi-hop research questions.

The model works in a loop: each turn it writes a thought and one action, `search[query]`
(the observation is the top-k search results) or `answer[...]` (ends the episode). The final
answer is graded against the gold answer; reward 1 if correct, else 0; score = 100 × accuracy.

Why the format is what it is: public DeepSearchQA agent code stops generation at "\\nAction:",
i.e. *before* the action, so its search tool is never called. Here generation stops at
"\\nObservation:" (after the action: a model that goes on to invent the observation is cut
there), and the parser takes the first action in the completion.

Sources:
- `hub` (default): `google/deepsearchqa` (`DSQA-full.csv`: `problem`, `problem_category`,
  `answer`, `answer_type` = "Single Answer" | "Set Answer"), split into the paper's sizes:
  200 held out, 100 train-visible, the rest unused. The split is seeded and fixed: rows are
  ordered by sha256(f"{SPLIT_SEED}:{id}") (independent of the file's row order), the first 200
  are held out, the next 100 train-visible. Search: the web API (`A2RL_SEARCH_API_URL`) when
  configured, else BM25 over a JSONL corpus given with `corpus_path` (`search` param forces one).
- `offline`: a generated fictional world (`make_data.py` beside this module, shipped in
  `tasks/deepsearchqa/data/`): 117 documents and 192 questions (Single and Set) that each need
  at least two searches, split into disjoint train (132) and held-out (60) questions. Searched
  with BM25. Its scores are not comparable with DeepSearchQA's.

Grading (`judge` param): `llm` asks any OpenAI-compatible judge (`a2rl.tasks._lib.judge`) with the
prompt `prompts/judge.txt` (question, answer type, gold and predicted answer;
reply exactly `correct` or `incorrect`); `string` is a normalised string match (every gold
item must appear; an empty prediction is never correct); `auto` = `llm` when a judge is
configured, else `string`. The grader used is recorded in the metrics (`grader_llm`).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import string
import unicodedata
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from a2rl._errors import A2RLError
from a2rl._util import stable_hash
from a2rl.envs import Env, Episode, RolloutConfig, Step, StepResult
from a2rl.inference import GenerationSettings
from a2rl.tasks._core.interactive import InteractiveTask
from a2rl.tasks._core.task import EvalOutcome, TaskParams
from a2rl.tasks._lib.hub import hub_dataset_file
from a2rl.tasks._lib.judge import (
    ENV_BASE_URL,
    ENV_MODEL,
    JudgeClient,
    JudgementCache,
    JudgeSettings,
    JudgeStats,
    configured_judge_model,
    judge_strict,
    judgement_key,
    sha256_text,
)
from a2rl.tasks.deepsearchqa.search import (
    ENV_SEARCH_URL,
    WEB_FIX,
    BM25CorpusBackend,
    SearchBackend,
    SearchError,
    WebSearchBackend,
    corpus_sha256,
    format_results,
    parse_corpus,
    public_url,
    web_search_configured,
)

HUB_REPO = "google/deepsearchqa"
HUB_FILE = "DSQA-full.csv"
SPLIT_SEED = 20250101
"""Fixed: the hub split must be the same for every run, agent and baseline."""
N_HELDOUT = 200
N_TRAIN = 100
OFFLINE_DIR = ("data",)
PROMPT_FILE = "judge.txt"
MAX_STEPS = 8
STOP = ("\nObservation:",)
"""Generation stops *after* the action, where the model would start inventing the observation."""
SINGLE, SET = "Single Answer", "Set Answer"
Grader = Literal["llm", "string"]
_STRIP = string.whitespace + string.punctuation
_ARTICLES = frozenset({"a", "an", "the"})


# ---- actions --------------------------------------------------------------------------------

_ACTION = re.compile(r"\b(search|answer)\s*\[", re.IGNORECASE)


def _bracket_body(text: str, start: int) -> str:
    """Text from `start` to the matching `]` (nested brackets allowed); when the bracket is never
    closed (e.g. generation hit the token limit), the rest of that line."""
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return text[start:].split("\n", 1)[0]


def parse_action(completion: str) -> str | None:
    """The first action in a completion, canonicalised as `search[query]` or `answer[text]`.

    Case-insensitive, anywhere in the text (an `Action:` prefix is expected but not required).
    Whitespace inside the brackets is collapsed. A `search` with an empty query is skipped (the
    next action, if any, counts); `answer[]` is an (empty, hence wrong) answer. None when the
    completion holds no action: the episode then ends without an answer."""
    for m in _ACTION.finditer(completion):
        body = " ".join(_bracket_body(completion, m.end()).split())
        name = m.group(1).lower()
        if name == "search" and not body:
            continue
        return f"{name}[{body}]"
    return None


def split_action(action: str) -> tuple[str, str]:
    """(`search` | `answer` | `invalid`, body) from a canonical action string."""
    m = re.fullmatch(r"(search|answer)\[(.*)\]", action.strip(), re.IGNORECASE | re.DOTALL)
    if not m:
        return "invalid", action
    return m.group(1).lower(), m.group(2).strip()


# ---- prompts --------------------------------------------------------------------------------


def first_observation(question: str, *, top_k: int, max_steps: int, collection: str) -> str:
    """The whole first user turn: the rules, the action format and the question."""
    return f"""You are a research agent. Answer the question at the end by searching {collection}.

Work in steps. In each reply, write one short thought, then exactly one action:

Thought: <your reasoning>
Action: search[<query>]

or, when you know the answer:

Thought: <your reasoning>
Action: answer[<final answer>]

Rules:
- search[<query>] returns the top {top_k} results in the next message, which starts with "Observation:".
- answer[<final answer>] ends the episode. Write only the answer, not a sentence. If the question asks \
for several items, give every one of them, separated by "; ".
- Only the first action of each reply is used; stop writing after it.
- You have at most {max_steps} actions. If you have not answered by then, the question counts as wrong.
- The facts you need are usually spread over several documents: search for one thing at a time and \
use what you found in the next search.

Question: {question}"""


def judge_template() -> str:
    """The judge prompt, shipped as a package file so its hash identifies it."""
    return resources.files(__package__).joinpath("prompts", PROMPT_FILE).read_text(encoding="utf-8")


def render_judge_prompt(template: str, *, question: str, answer_type: str, gold_answer: str,
                        predicted_answer: str) -> str:
    """Fill the template in one pass, so braces or placeholders inside answers stay literal."""
    values = {"question": question, "answer_type": answer_type, "gold_answer": gold_answer,
              "predicted_answer": predicted_answer}
    return re.sub(r"\{(question|answer_type|gold_answer|predicted_answer)\}", lambda m: values[m.group(1)],
                  template)


def parse_judge_verdict(reply: str) -> Literal["correct", "incorrect"] | None:
    """Strict: the whole reply, stripped of surrounding whitespace/punctuation and lower-cased,
    must be `correct` or `incorrect` ("Correct." and "**incorrect**" parse; "The answer is
    correct" does not: a judge that argues is a judge whose verdict we would be guessing)."""
    token = reply.strip(_STRIP).lower()
    if token == "correct":
        return "correct"
    if token == "incorrect":
        return "incorrect"
    return None


# ---- string-match grading -------------------------------------------------------------------


def normalize_answer(text: str) -> str:
    """Accents removed, case folded, punctuation turned into spaces, articles dropped."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    words = re.sub(r"[^\w\s]|_", " ", text).split()
    return " ".join(w for w in words if w not in _ARTICLES)


def string_match(prediction: str, gold_items: list[str]) -> bool:
    """The fallback grader (no judge configured).

    Correct when every gold item, normalised, appears as a whole-word phrase in the normalised
    prediction (one item for a Single answer, all of them for a Set). Never correct for an
    empty prediction or gold, nor for a prediction longer than max(20, 3 × the gold's words)
    words: listing every candidate must not pass. It cannot notice extra wrong items in a Set
    answer (the judge does), so it is more lenient there."""
    pred = normalize_answer(prediction)
    golds = [g for g in (normalize_answer(i) for i in gold_items) if g]
    if not pred or not golds:
        return False
    if len(pred.split()) > max(20, 3 * sum(len(g.split()) for g in golds)):
        return False
    padded = f" {pred} "
    return all(f" {g} " in padded for g in golds)


def split_set_answer(answer: str) -> list[str]:
    """Gold items of a Set answer string: split on semicolons/newlines when there are any, else
    on commas; a leading "and " is dropped. An approximation (an item may itself contain a
    comma); only the string fallback uses it, the judge sees the answer as written."""
    parts = re.split(r"[;\n]", answer) if re.search(r"[;\n]", answer) else answer.split(",")
    items = [re.sub(r"^\s*and\s+", "", p).strip(_STRIP) for p in parts]
    return [i for i in items if i] or [answer.strip()]


def answer_type_of(raw: str) -> str:
    return SET if "set" in raw.casefold() else SINGLE


# ---- grading --------------------------------------------------------------------------------


@dataclass
class Verdict:
    correct: bool
    grader: Grader
    verdict: str
    """`correct`, `incorrect`, `empty` (no answer text) or `unparseable` (the judge never
    replied with a verdict)."""
    replies: list[str] = field(default_factory=list)
    cached: bool = False


class AnswerGrader:
    """Grades final answers with the judge or the string match; `submit` grades in a thread
    pool so the judge calls of a lockstep batch run concurrently."""

    def __init__(self, mode: Grader, *, settings: JudgeSettings | None = None, parse_retries: int = 2,
                 concurrency: int = 8) -> None:
        self.mode = mode
        self.stats = JudgeStats()
        self.parse_retries = parse_retries
        self.settings = settings
        self.template = judge_template()
        self.template_sha256 = sha256_text(self.template)
        self._client: JudgeClient | None = None
        self._cache: JudgementCache | None = None
        if mode == "llm":
            if settings is None:
                raise ValueError("the llm grader needs judge settings")
            self._client = JudgeClient(settings, stats=self.stats)
            self._cache = JudgementCache()
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="a2rl-dsqa-judge")

    def grade(self, payload: dict[str, Any], prediction: str) -> Verdict:
        if not prediction.strip():
            return Verdict(False, self.mode, "empty")
        if self.mode == "string":
            ok = string_match(prediction, list(payload["answer_items"]))
            return Verdict(ok, "string", "correct" if ok else "incorrect")
        assert self._client is not None and self.settings is not None
        fields = [payload["question"], payload["answer_type"], payload["answer"], prediction]
        text = render_judge_prompt(self.template, question=fields[0], answer_type=fields[1],
                                   gold_answer=fields[2], predicted_answer=fields[3])
        key = judgement_key(template_sha256=self.template_sha256, model=self.settings.model, fields=fields)
        j = judge_strict(self._client, self._cache, key=key, messages=[{"role": "user", "content": text}],
                         parse=parse_judge_verdict, parse_retries=self.parse_retries)
        return Verdict(j.verdict == "correct", "llm", j.verdict or "unparseable", j.replies, j.cached)

    def submit(self, payload: dict[str, Any], prediction: str) -> Future[Verdict]:
        return self._pool.submit(self.grade, payload, prediction)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._client is not None:
            self._client.close()
        if self._cache is not None:
            self._cache.close()


# ---- environment ----------------------------------------------------------------------------


class DeepSearchQAEnv:
    """One question. `search[q]` → top-k results; `answer[a]` → done (graded by the task)."""

    def __init__(self, episode: Episode, backend: SearchBackend, *, top_k: int, max_steps: int,
                 collection: str, submit: Callable[[dict[str, Any], str], Future[Verdict]]) -> None:
        self.episode = episode
        self.backend = backend
        self.top_k, self.max_steps, self.collection = top_k, max_steps, collection
        self._submit = submit
        self.searches: list[str] = []
        self.answer: str | None = None
        self.verdict: Future[Verdict] | None = None
        self.n_actions = 0

    def reset(self) -> str:
        return first_observation(self.episode.payload["question"], top_k=self.top_k,
                                 max_steps=self.max_steps, collection=self.collection)

    def step(self, action: str) -> StepResult:
        if self.answer is not None:
            return StepResult("The episode is over.", 0.0, True)
        self.n_actions += 1
        name, body = split_action(action)
        if name == "answer":
            self.answer = body
            self.verdict = self._submit(self.episode.payload, body)  # graded concurrently
            return StepResult("Answer recorded.", 0.0, True, {"answer": body})
        if name == "search":
            self.searches.append(body)
            obs = "Observation:\n" + format_results(self.backend.search(body, self.top_k))
        else:
            obs = "Observation: not an action. Use search[<query>] or answer[<final answer>]."
        if self.n_actions == self.max_steps - 1:
            obs += "\n\nYou have one action left: give your final answer now with answer[...]."
        return StepResult(obs, 0.0, False, {"search": body} if name == "search" else {})

    def admissible_actions(self) -> list[str] | None:
        return None

    def close(self) -> None: ...


# ---- the task -------------------------------------------------------------------------------


class DeepSearchQAParams(TaskParams):
    source: Literal["hub", "offline"] = "hub"
    """`hub`: google/deepsearchqa (200 held out / 100 train, seeded); `offline`: the generated world."""
    max_heldout: int | None = Field(default=None, ge=1)
    """Evaluate only the first N held-out questions (smoke tests; None = all)."""
    search: Literal["auto", "corpus", "web"] = "auto"
    """`auto`: offline → the shipped corpus (or `corpus_path`); hub → the web API when
    $A2RL_SEARCH_API_URL is set, else `corpus_path`."""
    corpus_path: str | None = None
    """JSONL corpus for the BM25 backend: one {"id", "title", "text"[, "url"]} object a line."""
    top_k: int = Field(default=5, ge=1, le=20)
    """Results per search."""
    snippet_chars: int = Field(default=300, ge=50, le=4000)
    """Each result's text is cut to this many characters (at a word boundary)."""
    search_timeout_s: float = Field(default=30.0, gt=0)
    search_max_retries: int = Field(default=4, ge=0)
    search_cache: bool = True
    """Cache web results under $A2RL_HOME/search/ (re-evaluations see the same results)."""
    judge: Literal["auto", "llm", "string"] = "auto"
    """`auto`: `llm` when a judge URL or model is configured (param or env), else `string`."""
    judge_base_url: str | None = None
    """OpenAI-compatible base URL; None = $A2RL_JUDGE_BASE_URL. (The key comes from
    $A2RL_JUDGE_API_KEY only: params are recorded in run.json.)"""
    judge_model: str | None = None
    """Judge model name; None = $A2RL_JUDGE_MODEL."""
    judge_timeout_s: float = Field(default=120.0, gt=0)
    judge_max_retries: int = Field(default=6, ge=0)
    judge_backoff_s: float = Field(default=1.0, ge=0)
    judge_max_backoff_s: float = Field(default=60.0, ge=0)
    judge_max_tokens: int = Field(default=8, ge=1)
    judge_concurrency: int = Field(default=8, ge=1)
    parse_retries: int = Field(default=2, ge=0)
    """Extra judge calls when a reply is not exactly correct/incorrect; then the answer is wrong."""


@dataclass
class _Session:
    """What one rollout/evaluation holds open: the search backend and the grader."""

    backend: SearchBackend
    grader: AnswerGrader
    records: dict[str, dict[str, Any]] = field(default_factory=dict)


class DeepSearchQATask(InteractiveTask):
    name = "deepsearchqa"
    level = "L3"
    reward_kind = "judge"
    version = "1"
    audit_patterns = (r"\bgold_answer\b", r"answer_type.*==", r"google/deepsearchqa")
    Params = DeepSearchQAParams
    rollout: ClassVar[RolloutConfig] = RolloutConfig(
        generation=GenerationSettings(max_new_tokens=256, stop=STOP), max_steps=MAX_STEPS)
    params: DeepSearchQAParams

    def __init__(self, params: TaskParams | dict[str, Any] | None = None) -> None:
        super().__init__(params)
        self._session: _Session | None = None

    # ---- data ---------------------------------------------------------------------------------

    @cached_property
    def _offline_questions(self) -> list[dict[str, Any]]:
        text = _offline_text("questions.jsonl")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    @cached_property
    def _splits(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(train, held-out) question records of the source."""
        if self.params.source == "offline":
            qs = self._offline_questions
            return [q for q in qs if q["split"] == "train"], [q for q in qs if q["split"] == "heldout"]
        return split_hub(load_hub_rows())

    def _episode(self, q: dict[str, Any], split: str) -> Episode:
        payload = {k: v for k, v in q.items() if k not in {"id", "split"}}
        return Episode(id=str(q["id"]), split=split, payload=payload)

    def train_episodes(self) -> list[Episode]:
        return [self._episode(q, "train") for q in self._splits[0]]

    def heldout_episodes(self) -> list[Episode]:
        held = self._splits[1]
        held = held[: self.params.max_heldout] if self.params.max_heldout else held
        return [self._episode(q, "heldout") for q in held]

    # ---- search and grading configuration -----------------------------------------------------

    def search_kind(self) -> Literal["corpus", "web"]:
        """The backend this configuration uses. Raises (with a fix) when the hub source has
        nothing to search, rather than letting every search of an evaluation fail."""
        p = self.params
        if p.search != "auto":
            kind: Literal["corpus", "web"] = p.search
        elif p.source == "offline" or p.corpus_path:
            kind = "corpus"
        elif web_search_configured():
            kind = "web"
        else:
            raise SearchError("the hub source needs a search backend and none is configured",
                              f"export {ENV_SEARCH_URL}=<JSON search API> (see "
                              "a2rl.tasks.deepsearchqa.search), or give a local corpus: "
                              "--task-opt corpus_path=/path/corpus.jsonl, or use the "
                              "offline set: --task-opt source=offline")
        if kind == "corpus" and p.source == "hub" and not p.corpus_path:
            raise SearchError("the corpus backend needs a corpus for the hub source",
                              "--task-opt corpus_path=/path/corpus.jsonl (one {\"id\", \"title\", \"text\"} "
                              "object a line)")
        if kind == "web" and not web_search_configured():
            raise SearchError(f"search=web but {ENV_SEARCH_URL} is not set", WEB_FIX)
        return kind

    def grader_mode(self) -> Grader:
        """`auto` picks `llm` as soon as a judge URL or model is configured, so a half-configured
        judge fails loudly (JudgeSettings.resolve) instead of silently grading by string match."""
        p = self.params
        if p.judge != "auto":
            return p.judge
        url = p.judge_base_url or os.environ.get(ENV_BASE_URL, "").strip()
        return "llm" if url or configured_judge_model(p.judge_model) else "string"

    def judge_settings(self) -> JudgeSettings:
        p = self.params
        return JudgeSettings.resolve(base_url=p.judge_base_url, model=p.judge_model,
                                     timeout_s=p.judge_timeout_s, max_retries=p.judge_max_retries,
                                     backoff_s=p.judge_backoff_s, max_backoff_s=p.judge_max_backoff_s,
                                     max_tokens=p.judge_max_tokens)

    def collection_text(self) -> str:
        if self.search_kind() == "web":
            return "the web"
        if self.params.source == "offline" and not self.params.corpus_path:
            return "a collection of encyclopedia-style documents about a fictional world"
        return "a document collection"

    def make_backend(self) -> SearchBackend:
        p = self.params
        if self.search_kind() == "web":
            return WebSearchBackend(timeout_s=p.search_timeout_s, max_retries=p.search_max_retries,
                                    snippet_chars=p.snippet_chars, cache=p.search_cache)
        if p.corpus_path:
            return BM25CorpusBackend.from_jsonl(Path(p.corpus_path), snippet_chars=p.snippet_chars)
        text = _offline_text("corpus.jsonl")
        return BM25CorpusBackend(parse_corpus(text.splitlines(), "offline corpus"),
                                 snippet_chars=p.snippet_chars, label="a2rl offline corpus",
                                 sha256=sha256_text(text))

    def _search_identity(self) -> dict[str, Any]:
        """The backend's identity without building it (fingerprints are computed often)."""
        p = self.params
        if self.search_kind() == "web":
            return {"backend": "web", "api_url": public_url(os.environ.get(ENV_SEARCH_URL, ""))}
        if p.corpus_path:
            return {"backend": "corpus", "corpus_sha256": corpus_sha256(Path(p.corpus_path))}
        return {"backend": "corpus", "corpus_sha256": sha256_text(_offline_text("corpus.jsonl"))}

    def fingerprint(self) -> str:
        """Also keyed by the grader, judge model, judge prompt and search backend: none of them is
        visible in the params when they come from the environment, and each changes scores."""
        mode = self.grader_mode()
        judge = configured_judge_model(self.params.judge_model) if mode == "llm" else None
        return stable_hash({"base": super().fingerprint(), "grader": mode, "judge_model": judge,
                            "judge_prompt": sha256_text(judge_template()), "search": self._search_identity(),
                            "rollout": [MAX_STEPS, list(STOP), self.rollout.generation.max_new_tokens]})

    # ---- sessions: the backend and grader one rollout holds open ------------------------------

    def _ensure_session(self) -> _Session:
        if self._session is None:
            mode = self.grader_mode()
            settings = self.judge_settings() if mode == "llm" else None  # fails fast if unconfigured
            backend = self.make_backend()
            try:
                grader = AnswerGrader(mode, settings=settings, parse_retries=self.params.parse_retries,
                                      concurrency=self.params.judge_concurrency)
            except BaseException:
                backend.close()
                raise
            self._session = _Session(backend=backend, grader=grader)
        return self._session

    def close(self) -> None:
        """Release the search backend and the grader (the next rollout opens new ones)."""
        session, self._session = self._session, None
        if session is not None:
            try:
                session.grader.close()
            finally:
                session.backend.close()

    # ---- InteractiveTask ----------------------------------------------------------------------

    def make_env(self, episode: Episode) -> Env:
        s = self._ensure_session()
        return DeepSearchQAEnv(episode, s.backend, top_k=self.params.top_k, max_steps=self.rollout.max_steps,
                               collection=self.collection_text(), submit=s.grader.submit)

    def messages(self, episode: Episode, history: list[dict[str, str]]) -> list[dict[str, str]]:
        """No system message (not every chat template has one): the first user turn carries the
        rules and the question, then assistant turns (thought + action) alternate with
        observations."""
        return list(history)

    def parse_action(self, completion: str) -> str | None:
        return parse_action(completion)

    def finish(self, episode: Episode, env: Env, steps: list[Step]) -> tuple[float, bool]:
        if not isinstance(env, DeepSearchQAEnv):
            return super().finish(episode, env, steps)
        verdict = env.verdict.result() if env.verdict is not None else None
        reward = 1.0 if verdict is not None and verdict.correct else 0.0
        if verdict is not None and steps:
            steps[-1].reward = reward  # the answer step carries the episode's reward
        if self._session is not None:
            self._session.records[episode.id] = {
                "question": episode.payload["question"], "gold": episode.payload["answer"],
                "answer_type": episode.payload["answer_type"], "prediction": env.answer,
                "searches": list(env.searches),
                "grader": verdict.grader if verdict else self.grader_mode(),
                "verdict": verdict.verdict if verdict else "no_answer",
                "judge_replies": verdict.replies if verdict else [],
                "cached": bool(verdict and verdict.cached)}
        return reward, reward >= 1.0

    def collect(self, model_dir: Path, episodes: list[Episode], *, chat_template_from: Path | None,
                config: RolloutConfig | None = None,
                on_progress: Callable[[int], None] | None = None) -> list[Any]:
        owner = self._session is None
        self._ensure_session()
        try:
            return super().collect(model_dir, episodes, chat_template_from=chat_template_from, config=config,
                                   on_progress=on_progress)
        finally:
            if owner:
                self.close()

    def evaluate(self, model_dir: Path, *, chat_template_from: Path | None,
                 on_progress: Callable[[int, int], None] | None = None) -> EvalOutcome:
        session = self._ensure_session()  # judge and search configuration fail before the model loads
        try:
            outcome = super().evaluate(model_dir, chat_template_from=chat_template_from,
                                       on_progress=on_progress)
            return self._with_grading(outcome, session)
        finally:
            self.close()

    def _with_grading(self, outcome: EvalOutcome, session: _Session) -> EvalOutcome:
        """Add grading metrics, per-episode verdicts and a summary record to the generic outcome."""
        recs = session.records
        n = max(1, len(recs))
        g = session.grader
        metrics = dict(outcome.metrics)
        metrics.update({
            "accuracy": outcome.metrics.get("success_rate", 0.0),
            "grader_llm": 1.0 if g.mode == "llm" else 0.0,
            "answered_rate": round(100 * sum(r["prediction"] is not None for r in recs.values()) / n, 4),
            "mean_searches": round(sum(len(r["searches"]) for r in recs.values()) / n, 3),
            "judge_calls": float(g.stats.requests), "judge_cache_hits": float(g.stats.cache_hits),
            "judge_unparseable": float(sum(r["verdict"] == "unparseable" for r in recs.values())),
            "judge_http_retries": float(g.stats.http_retries),
        })
        details = [{"kind": "episode", **d, **recs.get(str(d.get("episode_id")), {})}
                   for d in outcome.details]
        summary = {"kind": "summary", "task": self.name, "version": self.version,
                   "source": self.params.source, "n_items": outcome.n_items, "score": outcome.score,
                   "score_metric": "accuracy",
                   "grader": g.mode, "judge_model": g.settings.model if g.settings else None,
                   "judge_base_url": public_url(g.settings.base_url) if g.settings else None,
                   "judge_prompt_file": PROMPT_FILE, "judge_prompt_sha256": g.template_sha256,
                   "search": session.backend.describe(), "top_k": self.params.top_k, "max_steps": MAX_STEPS,
                   "stop": list(STOP), "split_seed": SPLIT_SEED if self.params.source == "hub" else None}
        return outcome.model_copy(update={"metrics": metrics, "details": [summary, *details]})

    # ---- description --------------------------------------------------------------------------

    def description(self, *, chat_preview: Callable[[list[dict[str, str]]], str] | None) -> str:
        p = self.params
        train = self.train_episodes()
        example = train[0]
        first = first_observation(example.payload["question"], top_k=p.top_k, max_steps=MAX_STEPS,
                                  collection=self.collection_text())
        msgs = self.messages(example, [{"role": "user", "content": first}])
        rendered = chat_preview(msgs) if chat_preview else json.dumps(msgs, indent=1)
        n_eval = len(self.heldout_episodes())
        mode = self.grader_mode()
        kind = self.search_kind()
        if p.source == "hub":
            data = (f"{len(train)} DeepSearchQA questions (`{HUB_REPO}`), with their gold answers; the "
                    f"{n_eval} held-out questions come from the same set (a fixed seeded split, seed "
                    f"{SPLIT_SEED}) and are never shown to you")
        else:
            data = (f"{len(train)} questions about a generated fictional world (the offline source), with "
                    f"gold answers; the {n_eval} held-out questions are different questions about the same "
                    "world")
        search_text = ("a web search API (JSON, results cached by the evaluator)" if kind == "web" else
                       "BM25 over a fixed document collection (`bm25s`, English stopwords, no stemming)")
        if mode == "llm":
            judge = configured_judge_model(p.judge_model) or f"the model set in `{ENV_MODEL}`"
            grading = f"""an LLM judge (`{judge}`, any OpenAI-compatible endpoint, temperature 0) with
  this prompt (`{PROMPT_FILE}`, sha256 `{sha256_text(judge_template())}`):

```
{judge_template().rstrip()}
```

  The judge's reply must be exactly `correct` or `incorrect` (case, surrounding whitespace and
  punctuation aside); an unparseable reply is asked again up to {p.parse_retries} more times, then the
  answer counts as wrong."""
        else:
            grading = """a normalised string match (no judge is configured): accents, case,
  punctuation and the articles a/an/the are ignored; the answer is correct when every gold item
  appears in it as a whole phrase (one item for a Single answer, all items for a Set answer), and
  it has at most max(20, 3 × the gold's words) words."""
        return f"""# Task: deepsearchqa (level L3, judge reward)

Make the model a better research agent: it answers multi-step questions by searching, reading the
results and searching again, then giving a final answer (DeepSearchQA).

## Data you may use
`data/episodes.jsonl`: {data}.

One JSON object per line: `id`, `split` (`train`) and `payload` with `question`, `answer` (the
gold answer as text), `answer_items` (its items), `answer_type` (`Single Answer` or `Set Answer`)
and, for the offline source, `support` (the ids of the documents that hold the facts).
`a2rl rollout --task deepsearchqa --model <dir>` runs your model on these episodes with exactly
the evaluator's loop and writes trajectories you can train on (with the grader configured where
it runs: the string match when no judge is configured there).

## How a submission is evaluated (exactly)
- Each held-out question is one episode of at most {MAX_STEPS} model turns. The first user message
  holds the rules and the question; for the first training question, rendered with the **base
  model's chat template** (no system message is added), the model sees exactly:

```
{rendered}
```

- Each turn the model generates greedily, at most {self.rollout.generation.max_new_tokens} new tokens;
  generation stops at the end-of-turn token or at `\\nObservation:` (so a model that starts
  inventing results is cut off right after its action).
- The **first** `search[...]` or `answer[...]` in the reply is the action (case-insensitive; a
  `search[]` with an empty query is skipped; an unclosed bracket takes the rest of its line). A
  reply without an action ends the episode with no answer.
- `search[query]`: {search_text}.
  The next user message is `Observation:` followed by the top
  {p.top_k} results, each `[i] title (id or URL)` and a snippet of at most {p.snippet_chars} characters.
- `answer[...]` ends the episode. Before the last allowed action the observation reminds the model
  to answer. No answer within {MAX_STEPS} actions = wrong.
- Grading: {grading}
- An empty answer is never correct. Reward 1 (correct) or 0; score = 100 × accuracy over the
  {n_eval} held-out questions.
"""


# ---- data sources ---------------------------------------------------------------------------


def _offline_text(name: str) -> str:
    return resources.files(__package__).joinpath(*OFFLINE_DIR, name).read_text(encoding="utf-8")


def hub_csv() -> Path:
    """`DSQA-full.csv` from the Hub (or its cache)."""
    return hub_dataset_file(HUB_REPO, HUB_FILE, "DeepSearchQA")


def load_hub_rows(path: Path | None = None) -> list[dict[str, Any]]:
    """Question records from DSQA-full.csv; rows without a problem or an answer are dropped."""
    path = path or hub_csv()
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            missing = {"problem", "answer", "answer_type"} - set(reader.fieldnames or [])
            if missing:
                raise ValueError(f"missing columns: {', '.join(sorted(missing))}")
            raw = list(reader)
    except (OSError, ValueError, csv.Error) as exc:
        raise A2RLError(f"{HUB_REPO}/{HUB_FILE} in the Hugging Face cache is unreadable: {exc}",
                        "delete it from the cache and download it again") from exc
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, r in enumerate(raw):
        problem, answer = (r.get("problem") or "").strip(), (r.get("answer") or "").strip()
        rid = f"dsqa-{(r.get('example_id') or '').strip() or i}"
        if not problem or not answer or rid in seen:
            continue
        seen.add(rid)
        kind = answer_type_of(r.get("answer_type") or "")
        rows.append({"id": rid, "question": problem, "answer": answer, "answer_type": kind,
                     "answer_items": split_set_answer(answer) if kind == SET else [answer],
                     "category": (r.get("problem_category") or "").strip()})
    return rows


def split_hub(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(train, held-out): rows ordered by sha256(f"{SPLIT_SEED}:{id}"); the first N_HELDOUT are
    held out, the next N_TRAIN train-visible. Independent of the file's row order."""
    order = sorted(rows, key=lambda r: hashlib.sha256(f"{SPLIT_SEED}:{r['id']}".encode()).hexdigest())
    return order[N_HELDOUT:N_HELDOUT + N_TRAIN], order[:N_HELDOUT]
