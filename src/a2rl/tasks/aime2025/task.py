"""`aime2025` (L1, rule-based): the 30 problems of AIME 2025 (I and II), scored with pass@k.

The trajectory study ("What is Missing from AI Post-Training AI") runs its interventions on GSM8K, HumanEval
and AIME 2025, scored with pass@8 because one problem is worth 3.3 points. This task reruns that
setting:

- `source=hub` (default): the held-out set is `math-ai/aime25` (split `test`, 30 problems), the
  data set lm-eval 0.4.13's `aime25` task reads (`dataset=MathArena/aime_2025`, MathArena's
  copy, is the alternative). The train-visible set is the AIME problems of 1983–2024
  (`gneubig/aime-1983-2024`, lm-eval's `aime` task): earlier exams, so it is independent of
  the 2025 items by construction. Loading needs the network or a warm Hugging Face cache; a
  failure is an A2RLError, never a silent switch of data set.
- `source=offline`: 30 integer-answer problems written for a2rl in the AIME shape (answers
  0–999; package data, masked in the sandbox) as the held-out set, and generated
  competition-style problems with worked solutions (public seed) as train data. Scores are
  NOT comparable with AIME 2025; it exists for tests and offline smoke runs.

Each problem is one user message asking for the answer in `\\boxed{}`; each of n samples
(default 8, temperature 0.6, top_p 0.95, seed + j) is judged with lm-eval's aime25
`exact_match` (see `scoring.py`), and a problem with c correct samples scores the unbiased
pass@k = 1 - C(n-c, k)/C(n, k) (default k = 8). The score is 100 × the mean over problems;
pass@1 (mean c/n) is reported beside it.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable
from functools import cached_property
from importlib import resources
from math import comb, gcd
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from a2rl._errors import A2RLError
from a2rl.inference import GenerationSettings
from a2rl.tasks._core.registry import tasks
from a2rl.tasks._core.static import StaticTextTask
from a2rl.tasks._core.task import EvalOutcome, TaskParams, item_id
from a2rl.tasks._lib.splits import stream_seed
from a2rl.tasks.aime2025.scoring import extract_answer, lm_eval_correct, pass_at_k, reference_name

HUB_DATASETS: dict[str, str] = {"math-ai/aime25": "test", "MathArena/aime_2025": "train"}
"""Held-out data sets (hub id → split) with the 30 problems of AIME 2025."""
HUB_TRAIN = ("gneubig/aime-1983-2024", "train")
OFFLINE_HELDOUT_FILE = "offline_heldout.jsonl"
TRAIN_SEED = 2025  # public: the offline train split is visible anyway
INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."


class AIME2025Params(TaskParams):
    source: Literal["hub", "offline"] = "hub"
    """`hub` = AIME 2025 from the Hugging Face Hub (needs the network or a warm cache);
    `offline` = a2rl's own 30 AIME-shaped problems (scores not comparable with AIME 2025)."""
    dataset: Literal["math-ai/aime25", "MathArena/aime_2025"] = "math-ai/aime25"
    """hub only: which copy of AIME 2025 is held out (lm-eval's aime25 reads math-ai/aime25)."""
    n_samples: int = Field(8, ge=1)
    """Completions per problem."""
    k: int = Field(8, ge=1)
    """The k of pass@k (at most n_samples)."""
    temperature: float = Field(0.6, ge=0.0)
    """Sampling temperature of every sample (0 with n_samples=1 = greedy)."""
    top_p: float = Field(0.95, gt=0.0, le=1.0)
    """Nucleus sampling."""
    seed: int = 0
    """Sample j of every problem is drawn with seed `seed + j`."""
    max_new_tokens: int = Field(4096, ge=16)
    """Generation budget per sample (lm-eval allows 32768 for reasoning models)."""
    n_train: int | None = Field(None, ge=1)
    """Train-visible problems: hub = the first n of 1983–2024 (None = all); offline = n
    generated ones (None = 500)."""
    max_heldout: int | None = Field(None, ge=1)
    """Score only the first n held-out problems (smoke runs); None = all 30."""

    @model_validator(mode="after")
    def _check(self) -> AIME2025Params:
        if self.k > self.n_samples:
            raise ValueError(f"k={self.k} needs n_samples >= k (got {self.n_samples})")
        if self.n_samples > 1 and self.temperature == 0:
            raise ValueError("n_samples > 1 with temperature 0 gives n identical samples")
        return self


def _data_path(name: str) -> Path:
    return Path(str(resources.files(__package__).joinpath("data", name)))


def hub_item(row: dict[str, Any], index: int) -> dict[str, Any]:
    """One row of an AIME 2025 copy as an item. The answer column is found as lm-eval finds
    it (the first key that is `answer` in any case); MathArena stores it as an integer."""
    answer_key = next((k for k in row if k.lower() == "answer"), None)
    problem_key = next((k for k in row if k.lower() in ("problem", "question")), None)
    if answer_key is None or problem_key is None:
        raise KeyError(f"no problem/answer columns in {sorted(row)}")
    ident = row.get("id", row.get("problem_idx", index + 1))
    return {"id": f"aime2025-{ident}", "problem": str(row[problem_key]).strip(),
            "answer": str(row[answer_key]).strip()}


# ---- offline train problems: competition-style, integer answers, worked solutions ------------
def _divisor_count(n: int) -> int:
    return sum(1 + (d * d != n) for d in range(1, int(n ** 0.5) + 1) if n % d == 0)


def offline_train_problem(rng: random.Random, index: int) -> dict[str, Any]:
    kind = rng.randrange(5)
    if kind == 0:
        a, b, m = rng.randint(2, 19), rng.randint(50, 3000), 1000
        ans = pow(a, b, m)
        problem = f"Find the remainder when ${a}^{{{b}}}$ is divided by ${m}$."
        steps = (f"Work modulo $8$ and $125$ separately (Euler: exponents reduce modulo "
                 f"$\\varphi(125)=100$ when $\\gcd({a},10)=1$), or square repeatedly modulo "
                 f"$1000$. Either way ${a}^{{{b}}} \\equiv {ans} \\pmod{{1000}}$.")
    elif kind == 1:
        n, r = rng.randint(12, 40), rng.randint(3, 8)
        ans = comb(n, r) % 1000
        problem = f"Find the remainder when $\\binom{{{n}}}{{{r}}}$ is divided by $1000$."
        steps = f"$\\binom{{{n}}}{{{r}}} = {comb(n, r)}$, whose last three digits are ${ans}$."
    elif kind == 2:
        n = rng.randint(100, 5000)
        ans = _divisor_count(n)
        problem = f"How many positive divisors does ${n}$ have?"
        steps = (f"Factor ${n}$ into primes and multiply the exponents plus one: ${n}$ has "
                 f"${ans}$ divisors.")
    elif kind == 3:
        r = rng.randint(3, 17)
        ans = sum(1 for x in range(-r, r + 1) for y in range(-r, r + 1) if x * x + y * y <= r * r)
        problem = f"How many points $(x,y)$ with integer coordinates satisfy $x^2+y^2\\le {r * r}$?"
        steps = (f"For each $x$ from $-{r}$ to ${r}$ count the integers $y$ with "
                 f"$y^2\\le {r * r}-x^2$ and add: the total is ${ans}$.")
    else:
        n = rng.randint(20, 999)
        ans = sum(1 for a in range(1, n) if gcd(a, n - a) == 1)
        problem = (f"Find the number of ordered pairs $(a,b)$ of positive integers with "
                   f"$a+b={n}$ and $\\gcd(a,b)=1$.")
        steps = (f"$\\gcd(a,{n}-a)=\\gcd(a,{n})$, so the pairs are the $a<{n}$ coprime to ${n}$: "
                 f"there are $\\varphi({n})={ans}$.")
    if ans > 999:
        ans %= 1000
        steps += f" Its remainder modulo $1000$ is ${ans}$."
        problem = problem.rstrip("?.") + ". Give the answer modulo $1000$."
    return {"id": f"train-{index}", "problem": problem,
            "solution": f"{steps}\n\nThe answer is $\\boxed{{{ans}}}$.", "answer": str(ans)}


@tasks.register("aime2025")
class AIME2025Task(StaticTextTask):
    name = "aime2025"
    level = "L1"
    reward_kind = "rule"
    version = "1"
    Params = AIME2025Params
    params: AIME2025Params
    generation: ClassVar[GenerationSettings] = GenerationSettings(max_new_tokens=4096)

    @classmethod
    def sandbox_masked_paths(cls) -> list[Path]:
        """The offline held-out problems ship as package data: hidden in the agent's sandbox."""
        return [_data_path(OFFLINE_HELDOUT_FILE)]

    # ---- data ----------------------------------------------------------------------------------
    def _load_hub(self, name: str, split: str, what: str) -> list[dict[str, Any]]:
        fix = ("no network? pre-download the data set into the Hugging Face cache on a connected "
               "machine, or pass --task-opt source=offline (a2rl's own problems; scores not "
               "comparable with AIME 2025)")
        try:
            import datasets
        except ImportError as exc:
            raise A2RLError("task aime2025 with source=hub needs the `datasets` package",
                            f"pip install datasets; {fix}") from exc
        try:
            return [dict(row) for row in datasets.load_dataset(name, split=split)]
        except Exception as exc:  # network, cache, auth, schema: all mean "no data here"
            raise A2RLError(f"could not load {what} ({name}, split {split}) from the Hugging "
                            f"Face Hub: {type(exc).__name__}: {exc}", fix) from exc

    def heldout_items(self) -> list[dict[str, Any]]:
        n = self.params.max_heldout
        return self._heldout[:n] if n else self._heldout

    @cached_property
    def _heldout(self) -> list[dict[str, Any]]:
        p = self.params
        if p.source == "offline":
            lines = _data_path(OFFLINE_HELDOUT_FILE).read_text(encoding="utf-8").splitlines()
            return [json.loads(line) for line in lines if line.strip()]
        rows = self._load_hub(p.dataset, HUB_DATASETS[p.dataset], "AIME 2025")
        try:
            items = [hub_item(row, i) for i, row in enumerate(rows)]
        except KeyError as exc:
            raise A2RLError(f"{p.dataset} is not in the expected AIME format: {exc}",
                            "report it; meanwhile pass --task-opt source=offline") from exc
        if len(items) != 30:
            raise A2RLError(f"{p.dataset} holds {len(items)} problems, not AIME 2025's 30",
                            "check the data set id (--task-opt dataset=...)")
        return items

    def train_items(self) -> list[dict[str, Any]]:
        return self._train

    @cached_property
    def _train(self) -> list[dict[str, Any]]:
        p = self.params
        if p.source == "offline":
            rng = random.Random(stream_seed(self.name, "train", TRAIN_SEED))
            return [offline_train_problem(rng, i) for i in range(p.n_train or 500)]
        rows = self._load_hub(*HUB_TRAIN, "the AIME problems of 1983-2024")
        items = []
        for i, row in enumerate(rows):
            year = row.get("Year")
            if year is not None and int(year) >= 2025:  # never a 2025 problem, whatever the copy
                continue
            items.append({"id": str(row.get("ID") or f"train-{i}"),
                          "problem": str(row["Question"]).strip(),
                          "answer": str(row["Answer"]).strip(), "year": year})
        return items[: p.n_train] if p.n_train else items

    def heldout_in_train(self) -> int:
        """Held-out problems whose text also occurs in the train split (0 by construction)."""
        train = {" ".join(item["problem"].split()) for item in self._train}
        return sum(" ".join(item["problem"].split()) in train for item in self.heldout_items())

    # ---- prompt and scoring ----------------------------------------------------------------------
    def user_message(self, problem: str) -> str:
        return f"{problem}\n\n{INSTRUCTION}"

    def gold_answer(self, item: dict[str, Any]) -> str | None:
        return str(item["answer"])

    def frame_answer(self, item: dict[str, Any], text: str) -> str:
        return f"Therefore the answer is $\\boxed{{{text}}}$."

    def messages(self, item: dict[str, Any]) -> list[dict[str, str]]:
        return [{"role": "user", "content": self.user_message(item["problem"])}]

    def sample_settings(self) -> list[GenerationSettings]:
        """One setting per sample, each with its own seed (backends that seed per request
        would otherwise return n copies)."""
        p = self.params
        base = dataclasses.replace(self.generation, max_new_tokens=p.max_new_tokens)
        if p.n_samples == 1 and p.temperature == 0:
            return [base]
        return [dataclasses.replace(base, temperature=p.temperature, top_p=p.top_p,
                                    seed=p.seed + j) for j in range(p.n_samples)]

    def score_batch(self, items: list[dict[str, Any]], prompts: list[str],
                    samples: list[list[str]], *,
                    on_progress: Callable[[int], None] | None = None) -> EvalOutcome:
        p = self.params
        n = len(samples)
        k = min(p.k, n)
        details: list[dict[str, Any]] = []
        scores: list[float] = []
        pass1: list[float] = []
        for i, item in enumerate(items):
            completions = [samples[j][i] for j in range(n)]
            verdicts = [lm_eval_correct(c, item["answer"]) for c in completions]
            c = sum(verdicts)
            scores.append(pass_at_k(n, c, k))
            pass1.append(c / n)
            details.append({"id": item_id(item, i), "prompt": prompts[i],
                            "completions": completions,
                            "extracted": [extract_answer(c)[-200:] for c in completions],
                            "correct": verdicts, "answer": item["answer"], "n_correct": c,
                            "score": scores[-1]})
        m = max(1, len(items))
        metrics = {f"pass@{k}": round(100.0 * sum(scores) / m, 4),
                   "pass@1": round(100.0 * sum(pass1) / m, 4),
                   "heldout_in_train": float(self.heldout_in_train())}
        return EvalOutcome(score=round(100.0 * sum(scores) / m, 4), n_items=len(items),
                           metrics=metrics, details=details)

    def scorer(self) -> str:
        return reference_name() + f" (k={self.params.k}, n={self.params.n_samples})"

    # ---- what the agent gets ---------------------------------------------------------------------
    def write_train_data(self, data_dir: Path) -> list[Path]:
        items = self.train_items()  # load first: a failed load must not leave an empty file
        data_dir.mkdir(parents=True, exist_ok=True)
        path = data_dir / "train.jsonl"
        with path.open("w") as fh:
            for item in items:
                fh.write(json.dumps({**item, "prompt": self.user_message(item["problem"])}) + "\n")
        return [path]

    def description(self, *, chat_preview: Callable[[list[dict[str, str]]], str] | None) -> str:
        p = self.params
        train = self.train_items()
        example = train[0]
        msgs = self.messages(example)
        rendered = chat_preview(msgs) if chat_preview else json.dumps(msgs)
        if p.source == "hub":
            source = (f"The held-out set is AIME 2025 (`{p.dataset}`, {len(self.heldout_items())} "
                      f"problems); your data are the AIME problems of 1983–2024 "
                      f"(`{HUB_TRAIN[0]}`), earlier exams.")
            fields = "`id`, `problem`, `answer`, `year` and `prompt`"
        else:
            source = ("This is the OFFLINE stand-in: the held-out set is a2rl's own "
                      f"{len(self.heldout_items())} AIME-shaped problems (not AIME 2025), your "
                      "data are generated competition-style problems with worked solutions, "
                      "drawn without looking at the held-out set.")
            fields = "`id`, `problem`, `solution` (ending in `\\boxed{N}`), `answer` and `prompt`"
        if p.n_samples == 1 and p.temperature == 0:
            decoding = f"greedy, one completion per problem, at most {p.max_new_tokens} new tokens"
        else:
            decoding = (f"{p.n_samples} samples per problem at temperature {p.temperature}, "
                        f"top_p {p.top_p} (sample j with seed {p.seed}+j), at most "
                        f"{p.max_new_tokens} new tokens each")
        return self.render_template(
            source=source, n_train=len(train), fields=fields, instruction=INSTRUCTION,
            rendered=rendered, decoding=decoding, k=p.k, n=p.n_samples,
            n_heldout=len(self.heldout_items()), scorer=self.scorer())
