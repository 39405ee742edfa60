"""`alpacaeval` (L2, LLM-judge reward): open-ended instruction following, AlpacaEval 2.0 style.

The model answers each held-out instruction; an LLM judge compares its answer with a reference
answer (pairwise, order randomised per item); the score is `alpaca_eval`'s win rate against the
reference, length-controlled (AlpacaEval 2.0's LC, via the `alpaca_eval` package's own GLM) when
its data is at hand. The metrics follow alpaca_eval exactly (`winrate.py`, checked against the
package by tests/tasks/test_reference_alpacaeval.py): outputs identical to the reference are a tie
without asking the judge, and an item whose judge reply never parses has no preference and is
left out of the win rate (its count is reported as `judge_unparseable`).

The judge protocol (`judge_protocol`): `alpaca_eval` (default) is alpaca_eval's own
`weighted_alpaca_eval_gpt4_turbo` annotator (its prompt, output order and log-probability parser,
called from the installed package; `annotator.py`) on the operator's judge endpoint, which must
return token log-probabilities; `a2rl` is a2rl's pairwise A/B/TIE prompt (`prompts/judge.txt`),
opt-in, for endpoints without log-probabilities. The record names the protocol.

Sources:
- `hub` (default): the 805 AlpacaEval instructions with GPT-4 Turbo reference outputs
  (`tatsu-lab/alpaca_eval`, `alpaca_eval_gpt4_baseline.json`, fetched with hf_hub_download: the
  dataset's loading script is refused by datasets >= 4) held out; the first `n_train` rows of
  `tatsu-lab/alpaca` train-visible, minus rows whose instruction is an evaluation instruction.
- `offline`: a small hand-written set for tests and demos without the Hub: train rows in
  `data/offline_train.json`, held-out instructions with references in `data/offline_heldout.json`
  (hidden inside the agent's sandbox: `sandbox_masked_paths`). The two were written
  independently (no held-out item is a gap in the train set). Not comparable to AlpacaEval.

The judge is any OpenAI-compatible endpoint configured by the operator (see `a2rl.tasks._lib.judge`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import random
import re
import string
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field

from a2rl._errors import A2RLError
from a2rl._util import stable_hash
from a2rl.inference import GenerationSettings
from a2rl.tasks._core.registry import tasks
from a2rl.tasks._core.static import StaticTextTask
from a2rl.tasks._core.task import EvalOutcome, TaskParams
from a2rl.tasks._lib.hub import hf_offline, hub_dataset_file
from a2rl.tasks._lib.judge import (
    ENV_MODEL,
    JudgeClient,
    JudgementCache,
    JudgeSettings,
    JudgeStats,
    configured_judge_model,
    judge_strict,
    judgement_key,
)
from a2rl.tasks.alpacaeval import annotator
from a2rl.tasks.alpacaeval.winrate import (
    ALPACA_EVAL_VERSION,
    LC_FILE,
    REFERENCE,
    TIE,
    length_controlled_winrate,
    preference,
    win_rate,
)

EVAL_REPO = "tatsu-lab/alpaca_eval"
EVAL_FILE = "alpaca_eval_gpt4_baseline.json"
# LC_FILE (winrate.py): what alpaca_eval's length-controlled win rate downloads from EVAL_REPO,
# annotations of two length-gamed baselines plus each instruction's fitted difficulty.
TRAIN_REPO = "tatsu-lab/alpaca"
TRAIN_FILE = "data/train-00000-of-00001-a09b74b3ef9c3b56.parquet"
OFFLINE_TRAIN_FILE = "offline_train.json"
OFFLINE_HELDOUT_FILE = "offline_heldout.json"
PROMPT_FILE = "judge.txt"
PROMPT_RESOURCE = f"prompts/{PROMPT_FILE}"
JUDGE_PROTOCOLS: dict[str, str] = {
    "alpaca_eval": f"alpaca_eval {ALPACA_EVAL_VERSION} annotator {annotator.ANNOTATOR} (its prompt, "
                   "output order and logprob parser) on the configured judge model",
    "a2rl": "a2rl pairwise A/B/TIE judge (prompts/judge.txt), not alpaca_eval's annotator",
}
"""Named in every record, so a score says which judge protocol produced it."""

Verdict = Literal["A", "B", "TIE"]
_VERDICTS: frozenset[str] = frozenset({"A", "B", "TIE"})
_STRIP = string.whitespace + string.punctuation


def judge_template() -> str:
    """The pairwise judge prompt, shipped as a package file so its hash identifies it."""
    return resources.files(__package__).joinpath(PROMPT_RESOURCE).read_text(encoding="utf-8")


def judge_template_sha256() -> str:
    return hashlib.sha256(judge_template().encode("utf-8")).hexdigest()


def render_judge_prompt(template: str, *, instruction: str, output_a: str, output_b: str) -> str:
    """Fill the template in one pass, so braces or placeholders inside outputs stay literal."""
    values = {"instruction": instruction, "output_a": output_a, "output_b": output_b}
    return re.sub(r"\{(instruction|output_a|output_b)\}", lambda m: values[m.group(1)], template)


def parse_verdict(reply: str) -> Verdict | None:
    """Strict: the whole reply, stripped of surrounding whitespace/punctuation and upper-cased,
    must be exactly A, B or TIE. "A." and "**tie**" parse; "Response A" or "A, because" do not
    (a judge that argues is a judge whose verdict we would be guessing)."""
    token = reply.strip(_STRIP).upper()
    return token if token in _VERDICTS else None  # type: ignore[return-value]


def model_is_a(seed: int, item_id: str) -> bool:
    """Whether the model's output is shown as Response A for this item. A per-item RNG seeded by
    (seed, item id), so the order does not shift when the held-out set is capped or reordered."""
    return random.Random(f"alpacaeval:{seed}:{item_id}").random() < 0.5


def win_value(verdict: Verdict | None, model_first: bool) -> float | None:
    """1 = the model's output won, 0.5 = TIE, 0 = lost; None when the verdict was unparseable
    (alpaca_eval leaves such an item out of the win rate)."""
    p = preference(verdict, model_first=model_first)
    return None if math.isnan(p) else p - 1.0


def user_message(instruction: str, input_text: str = "") -> str:
    """The single user turn: the instruction, plus a blank line and the input when there is one
    (Alpaca rows split some tasks into instruction + input; AlpacaEval has instructions only)."""
    return f"{instruction}\n\n{input_text}" if input_text.strip() else instruction


class AlpacaEvalParams(TaskParams):
    source: Literal["hub", "offline"] = "hub"
    """`hub`: AlpacaEval's 805 instructions + tatsu-lab/alpaca; `offline`: the shipped synthetic set."""
    n_train: int = Field(2000, ge=1)
    """Train-visible rows: the first n_train Alpaca rows, minus those that repeat an eval instruction."""
    max_heldout: int | None = Field(None, ge=1)
    """Evaluate only the first N held-out instructions (smoke tests; None = all)."""
    seed: int = 0
    """Seeds the per-item choice of which output the judge sees as Response A."""
    judge_base_url: str | None = None
    """OpenAI-compatible base URL; None = $A2RL_JUDGE_BASE_URL. (The API key is never a param:
    it comes from $A2RL_JUDGE_API_KEY only, since params are recorded in run.json.)"""
    judge_model: str | None = None
    """Judge model name; None = $A2RL_JUDGE_MODEL."""
    judge_protocol: Literal["alpaca_eval", "a2rl"] = "alpaca_eval"
    """`alpaca_eval`: alpaca_eval's weighted_alpaca_eval_gpt4_turbo annotator (needs the
    alpaca_eval package and a judge endpoint that returns logprobs); `a2rl`: a2rl's pairwise
    A/B/TIE prompt (opt-in; a different judge, named in the record)."""
    judge_timeout_s: float = Field(120.0, gt=0)
    judge_max_retries: int = Field(6, ge=0)
    """Retries of one request on 429/5xx/connection errors, with exponential backoff."""
    judge_backoff_s: float = Field(1.0, ge=0)
    judge_max_backoff_s: float = Field(60.0, ge=0)
    judge_max_tokens: int = Field(16, ge=1)
    """Reply budget of the `a2rl` protocol (alpaca_eval's annotator asks for 1 token)."""
    judge_concurrency: int = Field(8, ge=1)
    """Judge requests in flight at once."""
    parse_retries: int = Field(2, ge=0)
    """Extra judge calls for an item whose reply is not exactly A, B or TIE; then the item has no
    preference and is left out of the win rate, as alpaca_eval does (counted in
    `judge_unparseable`)."""


@tasks.register("alpacaeval")
class AlpacaEvalTask(StaticTextTask):
    name = "alpacaeval"
    level = "L2"
    reward_kind = "judge"
    version = "2"
    """2: alpaca_eval's treatment of unparseable verdicts (left out, not lost) and of outputs
    identical to the reference (a tie without the judge); unrounded metrics."""
    scoring_units = 1  # one judge verdict per completion
    audit_patterns = (r"offline_heldout\.json", r"alpaca_eval_gpt4_baseline", r"alpaca_eval\.json\b",
                      r"\bheldout_items\(")
    """Reading the held-out references: the offline file, the Hub's AlpacaEval reference outputs."""
    Params = AlpacaEvalParams
    generation: ClassVar[GenerationSettings] = GenerationSettings(max_new_tokens=512)
    """Decoding belongs to the task: greedy, fixed budget, whatever the submission asks for."""
    params: AlpacaEvalParams

    # ---- data ---------------------------------------------------------------------------------

    @classmethod
    def sandbox_masked_paths(cls) -> list[Path]:
        """Package data the agent's sandbox must hide: the offline held-out instructions and
        their references (the sandbox mounts the Python environment, a2rl's data included)."""
        return [_data_path(OFFLINE_HELDOUT_FILE)]

    @cached_property
    def _offline(self) -> dict[str, Any]:
        train = json.loads(_data_path(OFFLINE_TRAIN_FILE).read_text(encoding="utf-8"))
        heldout = json.loads(_data_path(OFFLINE_HELDOUT_FILE).read_text(encoding="utf-8"))
        return {"train": train["train"], "heldout": heldout["heldout"],
                "reference_generator": heldout["reference_generator"]}

    @cached_property
    def _all_heldout(self) -> list[dict[str, Any]]:
        """Every evaluation instruction of the source (uncapped: train filtering uses all)."""
        if self.params.source == "offline":
            generator = str(self._offline["reference_generator"])
            rows = [dict(r, generator=generator, dataset="a2rl-offline") for r in self._offline["heldout"]]
        else:
            path = hub_dataset_file(EVAL_REPO, EVAL_FILE, "the AlpacaEval evaluation set")
            try:
                rows = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(rows, list) or not all("instruction" in r and "output" in r for r in rows):
                    raise ValueError("not a list of {instruction, output} records")
            except (OSError, ValueError) as exc:
                raise A2RLError(f"{EVAL_REPO}/{EVAL_FILE} in the Hugging Face cache is unreadable: {exc}",
                                "delete it from the cache and download it again") from exc
            _prefetch_lc_file()
        return [{"id": f"alpacaeval-{i}", "index": i, "instruction": str(r["instruction"]),
                 "reference": str(r["output"]), "reference_generator": str(r.get("generator", "")),
                 "dataset": str(r.get("dataset", ""))} for i, r in enumerate(rows)]

    def heldout_items(self) -> list[dict[str, Any]]:
        items = self._all_heldout
        return items[: self.params.max_heldout] if self.params.max_heldout else items

    @cached_property
    def _train(self) -> tuple[list[dict[str, Any]], int]:
        """(train rows, number removed because they repeat an evaluation instruction)."""
        if self.params.source == "offline":
            raw = list(self._offline["train"])[: self.params.n_train]
        else:
            import pyarrow.parquet as pq

            path = hub_dataset_file(TRAIN_REPO, TRAIN_FILE, "the Alpaca training data")
            table = pq.read_table(path, columns=["instruction", "input", "output"])
            raw = table.slice(0, self.params.n_train).to_pylist()
        held = {_norm(e["instruction"]) for e in self._all_heldout}
        rows: list[dict[str, Any]] = []
        removed = 0
        for r in raw:
            instruction, input_text = str(r["instruction"]), str(r.get("input") or "")
            prompt = user_message(instruction, input_text)
            if _norm(instruction) in held or _norm(prompt) in held:
                removed += 1
                continue
            rows.append({"id": f"train-{len(rows)}", "instruction": instruction, "input": input_text,
                         "output": str(r["output"]), "prompt": prompt})
        return rows, removed

    def train_items(self) -> list[dict[str, Any]]:
        return self._train[0]

    def write_train_data(self, data_dir: Path) -> list[Path]:
        data_dir.mkdir(parents=True, exist_ok=True)
        path = data_dir / "train.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for row in self.train_items():
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        return [path]

    def reference_completion(self, item: dict[str, Any]) -> str | None:
        return str(item["reference"])  # the judge's own reference output: a tie, by design

    def messages(self, item: dict[str, Any]) -> list[dict[str, str]]:
        return [{"role": "user", "content": item["instruction"]}]

    def fingerprint(self) -> str:
        """Also keyed by the judge model and prompt: a baseline judged by another judge (set via
        $A2RL_JUDGE_MODEL, which params do not show) or another prompt is not comparable."""
        return stable_hash({"base": super().fingerprint(),
                            "judge_model": configured_judge_model(self.params.judge_model),
                            "judge_prompt": self._template_sha256()})

    def _template(self) -> str:
        """The judge prompt template of the configured protocol."""
        return annotator.template() if self.params.judge_protocol == "alpaca_eval" else judge_template()

    def _template_file(self) -> str:
        if self.params.judge_protocol == "alpaca_eval":
            return "alpaca_eval/" + "/".join(annotator.TEMPLATE_RESOURCE)
        return PROMPT_FILE

    def _template_sha256(self) -> str:
        if self.params.judge_protocol == "alpaca_eval" and not annotator.available():
            return "alpaca_eval-not-installed"
        return hashlib.sha256(self._template().encode("utf-8")).hexdigest()

    # ---- evaluation ---------------------------------------------------------------------------

    def judge_settings(self) -> JudgeSettings:
        """The judge endpoint; raises (before any generation) when it is not configured, or when
        the alpaca_eval protocol is chosen and the package is missing."""
        p = self.params
        if p.judge_protocol == "alpaca_eval" and not annotator.available():
            raise A2RLError("judge_protocol=alpaca_eval needs the alpaca_eval package, which is not "
                            "installed",
                            "pip install 'a2rl-bench[judge]' (alpaca_eval), or use a2rl's own pairwise "
                            "judge: "
                            "--task-opt judge_protocol=a2rl (recorded as a different judge)")
        return JudgeSettings.resolve(base_url=p.judge_base_url, model=p.judge_model,
                                     timeout_s=p.judge_timeout_s, max_retries=p.judge_max_retries,
                                     backoff_s=p.judge_backoff_s, max_backoff_s=p.judge_max_backoff_s,
                                     max_tokens=p.judge_max_tokens)

    def check_scoring(self) -> None:
        self.judge_settings()  # fail before the (slow) generation if unconfigured

    def score_batch(self, items: list[dict[str, Any]], prompts: list[str], samples: list[list[str]],
                    *, on_progress: Callable[[int], None] | None = None) -> EvalOutcome:
        return self.judge_completions(items, prompts, samples[0], on_progress=on_progress)

    def judge_completions(self, items: list[dict[str, Any]], prompts: list[str], completions: list[str],
                          *, settings: JudgeSettings | None = None,
                          on_progress: Callable[[int], None] | None = None) -> EvalOutcome:
        """Judge given completions against the references and aggregate (the second half of
        `evaluate`, separate so it can be tested and reused without a model)."""
        settings = settings or self.judge_settings()
        protocol = self.params.judge_protocol
        template = self._template()
        template_sha = hashlib.sha256(template.encode("utf-8")).hexdigest()
        stats = JudgeStats()
        cache = JudgementCache()
        client = JudgeClient(settings, stats=stats)
        logprob_client = annotator.LogprobChat(client) if protocol == "alpaca_eval" else None

        def judge_one(i: int) -> dict[str, Any]:
            item, completion = items[i], completions[i]
            first = model_is_a(self.params.seed, item["id"])
            out_a, out_b = (completion, item["reference"]) if first else (item["reference"], completion)
            row = {"kind": "item", "id": item["id"], "index": item["index"],
                   "instruction": item["instruction"], "prompt": prompts[i], "completion": completion,
                   "reference": item["reference"], "reference_generator": item["reference_generator"],
                   "response_a": "model" if first else "reference",
                   "response_b": "reference" if first else "model",
                   "judge_model": settings.model, "judge_prompt_file": self._template_file(),
                   "judge_prompt_sha256": template_sha}
            if completion == item["reference"]:
                # alpaca_eval (PairwiseAnnotatorLocal._preprocess): exactly equal outputs are a
                # tie, preference 1.5, and never reach the judge.
                return {**row, "verdict": "identical", "preference": TIE, "win": 0.5,
                        "judge_replies": [], "cached": False}
            if logprob_client is not None:
                return {**row, **self._annotate(logprob_client, cache, template_sha, settings, item,
                                                completion)}
            text = render_judge_prompt(template, instruction=item["instruction"],
                                       output_a=out_a, output_b=out_b)
            key = judgement_key(template_sha256=template_sha, model=settings.model,
                                fields=[item["instruction"], out_a, out_b])
            j = judge_strict(client, cache, key=key, messages=[{"role": "user", "content": text}],
                             parse=parse_verdict, parse_retries=self.params.parse_retries)
            verdict: Verdict | None = j.verdict  # type: ignore[assignment]
            pref = preference(verdict, model_first=first)
            return {**row, "verdict": verdict or "unparseable",
                    "preference": None if math.isnan(pref) else pref,
                    "win": win_value(verdict, first), "judge_replies": j.replies, "cached": j.cached}

        rows: list[dict[str, Any] | None] = [None] * len(items)
        pool = ThreadPoolExecutor(max_workers=self.params.judge_concurrency,
                                  thread_name_prefix="a2rl-judge")
        try:
            futures = {pool.submit(judge_one, i): i for i in range(len(items))}
            for fut in as_completed(futures):
                rows[futures[fut]] = fut.result()
                if on_progress:
                    on_progress(1)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            client.close()
            cache.close()
        details = [r for r in rows if r is not None]
        return self._aggregate(details, settings, template, template_sha, stats)

    def _annotate(self, client: annotator.LogprobChat, cache: JudgementCache, template_sha: str,
                  settings: JudgeSettings, item: dict[str, Any], completion: str) -> dict[str, Any]:
        """One pair through alpaca_eval's annotator protocol (see annotator.py)."""
        switched = annotator.is_switched(item["instruction"])
        out_1, out_2 = (completion, item["reference"]) if switched else (item["reference"], completion)
        msgs = annotator.messages(item["instruction"], out_1, out_2)
        key = judgement_key(template_sha256=template_sha, model=settings.model,
                            fields=["alpaca_eval", item["instruction"], out_1, out_2])
        j = judge_strict(client, cache, key=key, messages=msgs,  # type: ignore[arg-type]
                         parse=annotator.parse_choice, parse_retries=self.params.parse_retries)
        if j.verdict is None:
            return {"verdict": "unparseable", "preference": None, "win": None, "judge_replies": j.replies,
                    "cached": j.cached, "alpaca_eval_switched": switched,
                    "response_a": "model" if switched else "reference",
                    "response_b": "reference" if switched else "model"}
        pref = annotator.preference(j.verdict, switched=switched)
        return {"verdict": "preference", "preference": pref, "win": pref - 1.0, "judge_replies": j.replies,
                "cached": j.cached, "alpaca_eval_switched": switched,
                "response_a": "model" if switched else "reference",
                "response_b": "reference" if switched else "model"}

    def _aggregate(self, rows: list[dict[str, Any]], settings: JudgeSettings, template: str,
                   template_sha: str, stats: JudgeStats) -> EvalOutcome:
        n = len(rows)
        wr = win_rate([r["preference"] for r in rows])
        raw_wr = wr["win_rate"]
        no_verdicts = math.isnan(raw_wr)  # every judge reply unparseable: alpaca_eval gives NaN
        lc: dict[str, Any] = self._length_controlled(rows) if not no_verdicts else {
            "note": "LC not computed: no item has a judge verdict"}
        lc_value = lc.get("length_controlled_winrate")
        lc_rate: float | None = float(lc_value) if lc_value is not None else None
        score = lc_rate if lc_rate is not None else (0.0 if no_verdicts else raw_wr)
        metric = (f"{REFERENCE} length_controlled_winrate (glm length_controlled_v1)" if lc_rate is not None
                  else f"{REFERENCE} win_rate (get_winrate)")
        metrics: dict[str, float] = {
            "win_rate": 0.0 if no_verdicts else raw_wr,
            "lc_available": 1.0 if lc_rate is not None else 0.0,
            "score_is_lc": 1.0 if lc_rate is not None else 0.0,
            "n_wins": wr["n_wins"], "n_ties": wr["n_draws"], "n_losses": wr["n_wins_base"],
            "n_scored": wr["n_total"],
            "n_identical": float(sum(1 for r in rows if r["verdict"] == "identical")),
            "judge_calls": float(stats.requests),
            "judge_cache_hits": float(stats.cache_hits),
            "judge_unparseable": float(sum(1 for r in rows if r["verdict"] == "unparseable")),
            "judge_unparseable_replies": float(stats.unparseable_replies),
            "judge_http_retries": float(stats.http_retries),
            "avg_output_chars": round(sum(len(r["completion"]) for r in rows) / max(1, n), 2),
            "avg_reference_chars": round(sum(len(r["reference"]) for r in rows) / max(1, n), 2),
        }
        if not math.isnan(wr["standard_error"]):
            metrics["win_rate_standard_error"] = wr["standard_error"]
        if lc_rate is not None:
            metrics["lc_win_rate"] = lc_rate
            lc_se = lc.get("lc_standard_error")
            if lc_se is not None and math.isfinite(float(lc_se)):
                metrics["lc_standard_error"] = float(lc_se)
        summary = {
            "kind": "summary", "task": self.name, "version": self.version, "source": self.params.source,
            "n_items": n, "seed": self.params.seed,
            "score_metric": metric, "metric_reference": REFERENCE,
            "judge_protocol": JUDGE_PROTOCOLS[self.params.judge_protocol],
            "score": score, "win_rate": metrics["win_rate"],
            "n_scored": int(wr["n_total"]), "judge_unparseable": int(metrics["judge_unparseable"]),
            "unparseable_rule": "left out of the win rate (alpaca_eval drops items without a preference); "
                                "the LC GLM is fitted without them and averages over every item",
            "lc_available": lc_rate is not None, "lc_note": lc["note"], "lc_file": lc.get("file"),
            "lc_file_sha256": lc.get("file_sha256"), "alpaca_eval_version": lc.get("alpaca_eval_version"),
            "judge_model": settings.model, "judge_base_url": _public_url(settings.base_url),
            "judge_prompt_file": self._template_file(), "judge_prompt_sha256": template_sha,
            "judge_prompt": template,
            "parse_retries": self.params.parse_retries, "max_new_tokens": self.generation.max_new_tokens,
        }
        if no_verdicts:
            summary["score_note"] = ("no judge reply parsed: alpaca_eval's win rate is undefined (NaN); "
                                     "scored 0")
        return EvalOutcome(score=score, n_items=n, metrics=metrics, details=[summary, *rows])

    def _length_controlled(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """AlpacaEval 2.0's LC win rate via alpaca_eval's own GLM code, or a note saying why not.

        Never estimated any other way: without the package or its data file the score is the raw
        win rate and the record says so."""
        if self.params.source != "hub":
            return {"note": "LC not computed: its GLM uses AlpacaEval's per-instruction difficulty "
                            f"({LC_FILE}), which exists only for the 805 AlpacaEval instructions, and this "
                            "evaluation uses the offline synthetic set; the score is the raw win rate"}
        lc_file = lc_reference_file()
        if lc_file is None:
            return {"note": f"LC not computed: {EVAL_REPO}/{LC_FILE} is not in the local Hugging Face "
                            "cache (fetch it once with network access: huggingface-cli download "
                            f"--repo-type dataset {EVAL_REPO} {LC_FILE}); the score is the raw win rate"}
        file_info = {"file": LC_FILE, "file_sha256": hashlib.sha256(lc_file.read_bytes()).hexdigest()}
        try:
            result = length_controlled_winrate(rows, lc_file)
        except ImportError as exc:
            return {**file_info, "note": "LC not computed: the alpaca_eval package is not importable "
                                         f"({exc}; pip install alpaca_eval 'pandas<3' 'setuptools<81'); "
                                         "the score is the raw win rate"}
        except Exception as exc:  # their GLM fit failing must not cost the whole evaluation
            return {**file_info, "note": f"LC not computed: alpaca_eval's LC computation failed "
                                         f"({type(exc).__name__}: {exc}); the score is the raw win rate"}
        lc_value = result.get("length_controlled_winrate")
        if lc_value is None or not math.isfinite(lc_value):
            return {**file_info, "note": "LC not computed: alpaca_eval returned no finite LC win rate; "
                                         "the score is the raw win rate"}
        subset = "" if len(rows) == len(self._all_heldout) else f" on a subset of {len(rows)} instructions"
        return {**file_info, **result,
                "note": f"score = length-controlled win rate (alpaca_eval {result['alpaca_eval_version']}, "
                        f"glm length_controlled_v1){subset}"}

    # ---- description --------------------------------------------------------------------------

    def scorer(self) -> str:
        """What the score is, in words (description, records)."""
        judge = ("alpaca_eval's weighted_alpaca_eval_gpt4_turbo annotator"
                 if self.params.judge_protocol == "alpaca_eval" else "a2rl's own A/B/TIE judge")
        return (f"{REFERENCE} length-controlled win rate (plain win rate when the LC model file "
                f"is absent), judged by {judge}")

    def description(self, *, chat_preview: Callable[[list[dict[str, str]]], str] | None) -> str:
        p = self.params
        train, removed = self._train
        example = train[0] if train else {"prompt": "Give three tips for staying healthy."}
        msgs = [{"role": "user", "content": example["prompt"]}]
        rendered = chat_preview(msgs) if chat_preview else json.dumps(msgs)
        n_eval = len(self.heldout_items())
        judge = configured_judge_model(p.judge_model)
        judge_text = f"`{judge}`" if judge else f"the model the operator sets in `{ENV_MODEL}`"
        if p.judge_protocol == "alpaca_eval":
            ae_template = annotator.template() if annotator.available() else "(alpaca_eval is not installed)"
            judging = f"""- Judging: alpaca_eval {ALPACA_EVAL_VERSION}'s own annotator `{annotator.ANNOTATOR}`
  (AlpacaEval 2.0's default), run on the judge ({judge_text}, any OpenAI-compatible endpoint
  that returns token log-probabilities): alpaca_eval's prompt with the reference as one output
  and your answer as the other (which one is shown first is alpaca_eval's seeded choice per
  instruction), one token at temperature 1 with the top 5 log-probabilities; the preference is
  alpaca_eval's `logprob_parser` (the probability the judge names your answer's identifier,
  between 0 and 1 — a weighted win, not only 0/1). The prompt template
  (`alpaca_eval/evaluators_configs/alpaca_eval_clf_gpt4_turbo/alpaca_eval_clf.txt`) is:

```
{ae_template.rstrip()}
```

- An answer exactly equal to the reference is a tie (0.5) without asking the judge, as
  alpaca_eval does.
- A reply without the two identifiers among the top log-probabilities is asked again up to
  {p.parse_retries} more times; an item that never gets a preference is left out of the win rate
  (alpaca_eval's rule; the record counts them)."""
        else:
            template = judge_template()
            judging = f"""- Judging (a2rl's own pairwise judge, chosen with `judge_protocol=a2rl`; not
  alpaca_eval's GPT-4 Turbo annotator): the judge ({judge_text}, any OpenAI-compatible endpoint,
  temperature 0) sees the instruction, your model's answer and the reference answer, labelled
  Response A and Response B. Which answer is A is decided per item by a seeded coin flip
  (recorded), so position bias cancels out. The judge prompt (`{PROMPT_FILE}`, sha256
  `{judge_template_sha256()}`) is exactly:

```
{template.rstrip()}
```

- An answer exactly equal to the reference is a tie (0.5) without asking the judge, as
  alpaca_eval does.
- The judge's reply must be exactly `A`, `B` or `TIE` (case, surrounding whitespace and
  punctuation are ignored; anything else, e.g. `Response A`, is not accepted). An unparseable
  reply is asked again up to {p.parse_retries} more times; an item that never gets a verdict has no
  preference and is left out of the win rate (alpaca_eval's rule; the record counts them)."""
        if p.source == "hub":
            data_src = (f"the first {p.n_train} rows of the Stanford Alpaca data (`{TRAIN_REPO}`)")
            held_src = (f"{n_eval} instructions of AlpacaEval (`{EVAL_REPO}`, `{EVAL_FILE}`), each with a "
                        "reference answer written by GPT-4 Turbo")
            lc_status = (f"available on this installation ({LC_FILE} is cached), so the score is the "
                         "**length-controlled win rate**" if _lc_ready()
                         else f"not available on this installation ({LC_FILE} is not cached or the "
                              "`alpaca_eval` package is missing), so the score is the **raw win rate**")
        else:
            data_src = "a small hand-written instruction set shipped with a2rl (offline demo source)"
            held_src = f"{n_eval} hand-written instructions with hand-written reference answers"
            lc_status = ("not used with the offline source (LC needs AlpacaEval's per-instruction data), "
                         "so the score is the **raw win rate**")
        return self.render_template(
            n_train=len(train), data_src=data_src, removed=removed, held_src=held_src,
            rendered=rendered, max_new_tokens=self.generation.max_new_tokens, judging=judging,
            alpaca_eval_version=ALPACA_EVAL_VERSION, lc_status=lc_status)


# ---- Hub access and LC ----------------------------------------------------------------------


def _data_path(name: str) -> Path:
    """A package data file as a filesystem path (the sandbox masks files by path)."""
    return Path(str(resources.files(__package__).joinpath("data", name)))


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def lc_reference_file() -> Path | None:
    """alpaca_eval's LC data file if it is in the local cache (never downloads: evaluations run
    offline, and an LC computed from anything else would be made up)."""
    try:
        return hub_dataset_file(EVAL_REPO, LC_FILE, "alpaca_eval's length-control data",
                                cache_only=True)
    except A2RLError:
        return None


def _prefetch_lc_file() -> None:
    """Cache LC's data file while the Hub is reachable (the harness side), so the offline
    evaluation child finds it. Best effort: without it the score is the raw win rate."""
    if hf_offline() or lc_reference_file() is not None:
        return
    with contextlib.suppress(Exception):
        hub_dataset_file(EVAL_REPO, LC_FILE, "alpaca_eval's length-control data")


def _lc_ready() -> bool:
    import importlib.util

    return lc_reference_file() is not None and importlib.util.find_spec("alpaca_eval") is not None


def _public_url(url: str) -> str:
    """The judge URL without user:password@ (in case credentials were put there)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
