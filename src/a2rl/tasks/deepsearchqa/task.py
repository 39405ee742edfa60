"""`deepsearchqa` (L3, judge reward): a ReAct search agent answering multi-hop research questions.

The model works in a loop: each turn it writes a thought and one action, `search[query]`
(the observation is the top-k search results) or `answer[...]` (ends the episode). The final
answer is graded with DeepSearchQA's official rule (`grading.py`): which gold items it gives and
which extra items it adds; reward 1 if fully correct (every item, nothing extra), else 0; score =
100 × the fully correct rate, with precision, recall and F1 over the answer sets beside it.

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
- `offline`: generated fictional worlds (`make_data.py` beside this module): the train world
  (117 documents and 192 questions, Single and Set, each needing at least two searches) ships in
  `tasks/deepsearchqa/data/`; the 60 held-out questions come from a second world generated in
  memory from the installation's secret seed (`heldout_seed`), with its own documents, searched
  only on held-out episodes. No held-out question, answer or name is in the package, and the
  train questions are not drawn from the held-out world, so their complement reveals nothing.
  Searched with BM25. Its scores are not comparable with DeepSearchQA's.

Grading (`judge` param): `llm` asks any OpenAI-compatible judge (`a2rl.tasks._lib.judge`) with
`prompts/judge.txt`, a2rl's wording of the DeepSearchQA starter code's autorater prompt (same
inputs, same JSON reply: `correctness_details` per gold item and `excessive_answers`); `string`
fills the same two lists with a normalising string matcher (`grading.string_grade`, pinned by a
hand-labelled fixture); `auto` = `llm` when a judge is configured, else `string`. Either way the
official rule turns the two lists into the grade. The grader used is recorded (`grader_llm`).

Beside this module: `react.py` (the action format and its parser), `env.py` (one question's
environment), `answer_grader.py` (one answer graded by the judge or the string grader),
`sources.py` (the hub split and the offline files), `search.py`, `grading.py`, `make_data.py`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from a2rl._secrets import installation_seed
from a2rl._util import stable_hash
from a2rl.envs import Env, Episode, RolloutConfig, Step
from a2rl.inference import GenerationSettings
from a2rl.tasks._core.interactive import InteractiveTask
from a2rl.tasks._core.registry import tasks
from a2rl.tasks._core.task import EvalOutcome, TaskParams, secret_field
from a2rl.tasks._lib.judge import (
    ENV_BASE_URL,
    ENV_MODEL,
    JudgeSettings,
    configured_judge_model,
    sha256_text,
)
from a2rl.tasks.deepsearchqa.answer_grader import PROMPT_FILE, AnswerGrader, Grader, judge_template
from a2rl.tasks.deepsearchqa.env import DeepSearchQAEnv
from a2rl.tasks.deepsearchqa.grading import STRING_GRADER_VERSION
from a2rl.tasks.deepsearchqa.make_data import heldout_world
from a2rl.tasks.deepsearchqa.react import first_observation, parse_action
from a2rl.tasks.deepsearchqa.search import (
    ENV_SEARCH_URL,
    WEB_FIX,
    BM25CorpusBackend,
    SearchBackend,
    SearchError,
    WebSearchBackend,
    corpus_sha256,
    parse_corpus,
    public_url,
    web_search_configured,
)
from a2rl.tasks.deepsearchqa.sources import (
    HUB_REPO,
    SPLIT_SEED,
    data_path,
    load_hub_rows,
    offline_text,
    split_hub,
)

MAX_STEPS = 8
STOP = ("\nObservation:",)
"""Generation stops *after* the action, where the model would start inventing the observation."""
OFFICIAL_REFERENCE = ("DeepSearchQA (arXiv:2601.20975) and its Kaggle starter code "
                      "(andrewmingwang/deepsearchqa-starter-code, scriptVersionId 285323691)")
"""Where the grading rule and the judge prompt's structure come from."""
GRADER_NOTES: dict[str, str] = {
    "llm": "the judge fills the starter code's autorater JSON (correctness_details, excessive_answers); "
           "a2rl's prompt states the starter prompt's instructions in its own words",
    "string": "no judge configured: a2rl's string grader fills the same two lists (number, date and "
              "alias normalisation; an approximation of a judge, see deepsearchqa/grading.py)",
}
HELDOUT_SEED_NAME = "deepsearchqa-heldout-seed"
"""The installation secret (under $A2RL_HOME) that seeds the offline held-out world."""


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
    judge_max_tokens: int = Field(default=1024, ge=1)
    """The grader replies with a JSON object (an explanation and one entry per item)."""
    judge_concurrency: int = Field(default=8, ge=1)
    parse_retries: int = Field(default=2, ge=0)
    """Extra judge calls when a reply is not a usable JSON grade; then every item counts as
    missing (the answer is wrong)."""
    heldout_seed: int | None = secret_field()
    """Offline source: seed of the held-out world; None = this installation's secret seed (under
    $A2RL_HOME, never mounted in the sandbox). Secret (marked on the field): never written
    into a workspace or a run record."""


@dataclass
class _Session:
    """What one rollout/evaluation holds open: the search backends (one per corpus) and the
    grader."""

    backends: dict[str, SearchBackend]
    """By split (`train`, `heldout`); the same backend object for both unless the offline
    held-out world has its own corpus."""
    grader: AnswerGrader
    records: dict[str, dict[str, Any]] = field(default_factory=dict)

    def backend(self, split: str) -> SearchBackend:
        return self.backends["heldout" if split == "heldout" else "train"]

    def close_backends(self) -> None:
        for b in {id(b): b for b in self.backends.values()}.values():
            b.close()


@tasks.register("deepsearchqa")
class DeepSearchQATask(InteractiveTask):
    name = "deepsearchqa"
    level = "L3"
    reward_kind = "judge"
    version = "2"
    """2: DeepSearchQA's official rule (fully correct + precision/recall/F1), the starter-code
    autorater prompt as the judge, a string grader that applies the same rule; the offline
    held-out questions come from a separate world generated from the installation's secret seed."""
    audit_patterns = (r"\bgold_answer\b", r"answer_type.*==", r"google/deepsearchqa", r"\bheldout_world\(",
                      r"deepsearchqa-heldout-seed", r"\bheldout_episodes\(")
    Params = DeepSearchQAParams
    rollout: ClassVar[RolloutConfig] = RolloutConfig(
        generation=GenerationSettings(max_new_tokens=256, stop=STOP), max_steps=MAX_STEPS)
    params: DeepSearchQAParams

    def __init__(self, params: TaskParams | dict[str, Any] | None = None) -> None:
        super().__init__(params)
        self._session: _Session | None = None

    # ---- what the sandbox hides and shows ------------------------------------------------------

    @classmethod
    def sandbox_masked_paths(cls) -> list[Path]:
        """Package data the agent's sandbox must hide. The offline held-out questions are not in
        the package at all (they come from the secret seed); the train questions are written
        into the workspace, so the package copy is hidden as well: nothing held out can be
        read, and nothing inside needs the file."""
        return [data_path("questions.jsonl")]

    @classmethod
    def sandbox_visible_paths(cls) -> list[Path]:
        """Package data the in-sandbox tools need: the train world's corpus (what `a2rl
        rollout` searches on the train episodes)."""
        return [data_path("corpus.jsonl")]

    # ---- data ---------------------------------------------------------------------------------

    def _heldout_seed(self) -> int:
        """Resolved when the held-out set is first needed (never at construction, so a task
        built inside the sandbox for train rollouts never touches the secret), and never stored
        in the params (they are recorded in run.json)."""
        if self.params.heldout_seed is not None:
            return self.params.heldout_seed
        return installation_seed(HELDOUT_SEED_NAME)

    @cached_property
    def _offline_train(self) -> list[dict[str, Any]]:
        text = offline_text("questions.jsonl")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    @cached_property
    def _offline_heldout(self) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
        """(documents, questions) of the held-out world, generated in memory."""
        docs, qs = heldout_world(self._heldout_seed())
        return docs, [dict(q) for q in qs]

    @cached_property
    def _splits(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(train, held-out) question records of the source."""
        if self.params.source == "offline":
            return self._offline_train, self._offline_heldout[1]
        return split_hub(load_hub_rows())

    def _train_split(self) -> list[dict[str, Any]]:
        return self._offline_train if self.params.source == "offline" else self._splits[0]

    def _episode(self, q: dict[str, Any], split: str) -> Episode:
        payload = {k: v for k, v in q.items() if k not in {"id", "split"}}
        return Episode(id=str(q["id"]), split=split, payload=payload)

    def train_episodes(self) -> list[Episode]:
        return [self._episode(q, "train") for q in self._train_split()]

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

    def _own_heldout_corpus(self) -> bool:
        """The offline source searches the held-out world's documents on held-out episodes."""
        p = self.params
        return p.source == "offline" and not p.corpus_path and self.search_kind() == "corpus"

    def _heldout_corpus_text(self) -> str:
        docs = self._offline_heldout[0]
        return "".join(json.dumps(d, ensure_ascii=False, sort_keys=True) + "\n" for d in docs)

    def make_backend(self, split: str = "train") -> SearchBackend:
        """The search backend of one split's episodes."""
        p = self.params
        if self.search_kind() == "web":
            return WebSearchBackend(timeout_s=p.search_timeout_s, max_retries=p.search_max_retries,
                                    snippet_chars=p.snippet_chars, cache=p.search_cache)
        if p.corpus_path:
            return BM25CorpusBackend.from_jsonl(Path(p.corpus_path), snippet_chars=p.snippet_chars)
        if split == "heldout":
            text = self._heldout_corpus_text()
            return BM25CorpusBackend(parse_corpus(text.splitlines(), "held-out corpus"),
                                     snippet_chars=p.snippet_chars, label="a2rl offline held-out corpus",
                                     sha256=sha256_text(text))
        text = offline_text("corpus.jsonl")
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
        return {"backend": "corpus", "corpus_sha256": sha256_text(offline_text("corpus.jsonl")),
                "heldout_corpus_sha256": sha256_text(self._heldout_corpus_text())}

    def fingerprint(self) -> str:
        """Also keyed by the grader, judge model, judge prompt and search backend: none of them is
        visible in the params when they come from the environment, and each changes scores."""
        mode = self.grader_mode()
        judge = configured_judge_model(self.params.judge_model) if mode == "llm" else None
        grader: Any = [mode, STRING_GRADER_VERSION] if mode == "string" else mode
        return stable_hash({"base": super().fingerprint(), "grader": grader, "judge_model": judge,
                            "judge_prompt": sha256_text(judge_template()), "search": self._search_identity(),
                            "rollout": [MAX_STEPS, list(STOP), self.rollout.generation.max_new_tokens]})

    # ---- sessions: the backend and grader one rollout holds open ------------------------------

    def _ensure_session(self) -> _Session:
        if self._session is None:
            mode = self.grader_mode()
            settings = self.judge_settings() if mode == "llm" else None  # fails fast if unconfigured
            # Built lazily per split: a train rollout never generates the held-out world.
            train = self.make_backend("train")
            try:
                grader = AnswerGrader(mode, settings=settings, parse_retries=self.params.parse_retries,
                                      concurrency=self.params.judge_concurrency)
            except BaseException:
                train.close()
                raise
            self._session = _Session(backends={"train": train}, grader=grader)
        return self._session

    def _backend_for(self, session: _Session, split: str) -> SearchBackend:
        if split == "heldout" and "heldout" not in session.backends:
            session.backends["heldout"] = (self.make_backend("heldout") if self._own_heldout_corpus()
                                           else session.backends["train"])
        return session.backend(split)

    def close(self) -> None:
        """Release the search backend and the grader (the next rollout opens new ones)."""
        session, self._session = self._session, None
        if session is not None:
            try:
                session.grader.close()
            finally:
                session.close_backends()

    # ---- InteractiveTask ----------------------------------------------------------------------

    def make_env(self, episode: Episode) -> Env:
        s = self._ensure_session()
        return DeepSearchQAEnv(episode, self._backend_for(s, episode.split), top_k=self.params.top_k,
                               max_steps=self.rollout.max_steps, collection=self.collection_text(),
                               submit=s.grader.submit)

    def gold_answer(self, item: dict[str, Any]) -> str | None:
        return str(item["payload"]["answer"])

    def frame_answer(self, item: dict[str, Any], text: str) -> str:
        return f"Action: answer[{text}]"

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
                "grade": verdict.outcome.record() if verdict else None,
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
        """Add DeepSearchQA's metrics, per-episode grades and a summary record to the generic
        outcome. Every metric is a mean over the held-out episodes; an episode without an answer
        has precision = recall = F1 = 0 and is fully incorrect, as an empty response is."""
        recs = session.records
        n_eps = max(1, outcome.n_items)
        grades = [r["grade"] for r in recs.values() if r.get("grade")]

        def mean_of(key: str) -> float:
            return 100.0 * sum(float(g[key]) for g in grades) / n_eps

        no_answer = outcome.n_items - len(grades)
        g = session.grader
        metrics = dict(outcome.metrics)
        metrics.update({
            "fully_correct": mean_of("fully_correct"),
            "accuracy": mean_of("fully_correct"),
            "precision": mean_of("precision"), "recall": mean_of("recall"), "f1": mean_of("f1"),
            "fully_incorrect": 100.0 * (sum(bool(x["fully_incorrect"]) for x in grades) + no_answer) / n_eps,
            "correct_with_extraneous": mean_of("correct_with_extraneous"),
            "partially_correct": 100.0 * sum(0 < x["n_found"] < x["n_expected"] for x in grades) / n_eps,
            "grader_llm": 1.0 if g.mode == "llm" else 0.0,
            "answered_rate": round(100 * sum(r["prediction"] is not None for r in recs.values()) / n_eps, 4),
            "mean_searches": round(sum(len(r["searches"]) for r in recs.values()) / n_eps, 3),
            "judge_calls": float(g.stats.requests), "judge_cache_hits": float(g.stats.cache_hits),
            "judge_unparseable": float(sum(r["verdict"] == "unparseable" for r in recs.values())),
            "judge_http_retries": float(g.stats.http_retries),
        })
        details = [{"kind": "episode", **d, **recs.get(str(d.get("episode_id")), {})}
                   for d in outcome.details]
        backends = {k: b.describe() for k, b in session.backends.items()}
        summary = {"kind": "summary", "task": self.name, "version": self.version,
                   "source": self.params.source, "n_items": outcome.n_items, "score": outcome.score,
                   "score_metric": "fully_correct (DeepSearchQA rule: every expected item, no extra one)",
                   "metric_reference": OFFICIAL_REFERENCE,
                   "grader": g.mode, "grader_note": GRADER_NOTES[g.mode],
                   "judge_model": g.settings.model if g.settings else None,
                   "judge_base_url": public_url(g.settings.base_url) if g.settings else None,
                   "judge_prompt_file": PROMPT_FILE, "judge_prompt_sha256": g.template_sha256,
                   "search": backends.get("heldout", backends["train"]), "top_k": self.params.top_k,
                   "max_steps": MAX_STEPS, "stop": list(STOP),
                   "split_seed": SPLIT_SEED if self.params.source == "hub" else None}
        return outcome.model_copy(update={"metrics": metrics, "details": [summary, *details]})

    # ---- description --------------------------------------------------------------------------

    def scorer(self) -> str:
        """What the score is, in words (description, records)."""
        return (f"100 × fully-correct rate by the official rule of {OFFICIAL_REFERENCE}; "
                f"precision/recall/F1 reported; answers graded by: {self.params.judge} "
                "(llm = the judge, string = a2rl's string grader applying the same rule)")

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
                    f"gold answers, searched in that world's documents; the {n_eval} held-out questions are "
                    "about a second world of the same kind (same document and question templates, other "
                    "names and facts) generated from a secret seed of this installation, whose documents "
                    "are searched only during evaluation: you never see its names, documents or answers")
        search_text = ("a web search API (JSON, results cached by the evaluator)" if kind == "web" else
                       "BM25 over a fixed document collection (`bm25s`, English stopwords, no stemming)")
        rule = """the dataset's official rule (DeepSearchQA paper and its Kaggle starter
  code): the grader decides, for each item of the gold answer, whether your answer gives it, and
  lists every answer you give that is not in the gold answer (an extra item, or a second
  candidate: `Barcelona or Madrid` for `Barcelona` has one). The answer is **fully correct** when
  every gold item is found and nothing extra is given; precision = found / (found + extra),
  recall = found / gold items, F1 their harmonic mean (reported beside the score)."""
        if mode == "llm":
            judge = configured_judge_model(p.judge_model) or f"the model set in `{ENV_MODEL}`"
            grading = f"""{rule}
  The grader is an LLM judge (`{judge}`, any OpenAI-compatible endpoint, temperature 0) with
  this prompt (`{PROMPT_FILE}`, sha256 `{sha256_text(judge_template())}`; a2rl's wording of the
  starter code's autorater instructions, with the same JSON reply):

```
{judge_template().rstrip()}
```

  A reply that is not such a JSON object (or grades no item) is asked again up to
  {p.parse_retries} more times, then every gold item counts as missing."""
        else:
            grading = f"""{rule}
  No judge is configured, so a2rl's string grader fills the two lists: accents, case, articles
  and punctuation are ignored; numbers are compared in one form (`99,354` = `99354`, `two` = `2`,
  `1.5 million` = `1500000`, `45%` = `45 percent`), dates too (`5 March 2021` = `2021-03-05` =
  `03/05/2021`, month first unless the first number exceeds 12); a small alias table maps common
  variants (`USA` = `United States`, `Kiev` = `Kyiv`, `Bombay` = `Mumbai`, ...), a unit after a
  number has one spelling (`324 m` = `324 metres`, `5 kg` = `5 kilograms`), and an acronym in
  capitals matches the words it abbreviates (`WHO` = `World Health Organization`). Each gold
  item must appear as a whole phrase; what is left is split at `,` `;` `/` `and` `or` and
  brackets that hedge (`(possibly X)`), and each leftover piece naming something is an extra
  item (words right next to a found item, such as `99,354 residents`, qualify it, and so does a
  clause such as `, which is the capital`, unless it hedges). It is stricter
  than a judge on paraphrases (`Paris, France` for `Paris` has the extra item `France`; aliases
  outside the table do not match)."""
        return self.render_template(
            data=data, max_steps=MAX_STEPS, rendered=rendered,
            max_new_tokens=self.rollout.generation.max_new_tokens, search_text=search_text,
            top_k=p.top_k, snippet_chars=p.snippet_chars, grading=grading, n_eval=n_eval)
