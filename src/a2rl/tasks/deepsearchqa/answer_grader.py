"""Grading one final answer: by the LLM judge (the starter code's autorater JSON, asked with
`prompts/judge.txt`) or by the string grader, either way turned into a grade by DeepSearchQA's
official rule (`grading.py`). Judge calls run in a thread pool, so a lockstep batch's answers
are graded concurrently."""

from __future__ import annotations

import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

from a2rl.tasks._lib.judge import (
    JudgeClient,
    JudgementCache,
    JudgeSettings,
    JudgeStats,
    judge_strict,
    judgement_key,
    sha256_text,
)
from a2rl.tasks.deepsearchqa.grading import (
    Outcome,
    expected_items,
    outcome,
    outcome_from_verdict,
    parse_judge_reply,
    string_grade,
)

PROMPT_FILE = "judge.txt"
Grader = Literal["llm", "string"]


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


@dataclass
class Verdict:
    outcome: Outcome
    """The question's grade under DeepSearchQA's rule (found items, extra items)."""
    grader: Grader
    verdict: str
    """`fully_correct`, `correct_with_extraneous`, `partially_correct`, `fully_incorrect`,
    `empty` (no answer text) or `unparseable` (the judge never replied with a usable grade)."""
    replies: list[str] = field(default_factory=list)
    cached: bool = False

    @property
    def correct(self) -> bool:
        return self.outcome.fully_correct


def category(o: Outcome) -> str:
    """The paper's four disjoint categories."""
    if o.fully_correct:
        return "fully_correct"
    if o.correct_with_extraneous:
        return "correct_with_extraneous"
    return "partially_correct" if o.partially_correct else "fully_incorrect"


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
        items = expected_items(str(payload["answer"]), str(payload["answer_type"]),
                               payload.get("answer_items"))
        if not prediction.strip():
            return Verdict(outcome([False] * len(items), []), self.mode, "empty")
        if self.mode == "string":
            o = string_grade(prediction, items)
            return Verdict(o, "string", category(o))
        assert self._client is not None and self.settings is not None
        fields = [payload["question"], payload["answer_type"], payload["answer"], prediction]
        text = render_judge_prompt(self.template, question=fields[0], answer_type=fields[1],
                                   gold_answer=fields[2], predicted_answer=fields[3])
        key = judgement_key(template_sha256=self.template_sha256, model=self.settings.model, fields=fields)
        j = judge_strict(self._client, self._cache, key=key, messages=[{"role": "user", "content": text}],
                         parse=parse_judge_reply, parse_retries=self.parse_retries)
        if j.verdict is None:  # no usable grade: every expected item missing
            return Verdict(outcome([False] * len(items), []), "llm", "unparseable", j.replies, j.cached)
        o = outcome_from_verdict(j.verdict)
        return Verdict(o, "llm", category(o), j.replies, j.cached)

    def submit(self, payload: dict[str, Any], prediction: str) -> Future[Verdict]:
        return self._pool.submit(self.grade, payload, prediction)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._client is not None:
            self._client.close()
        if self._cache is not None:
            self._cache.close()

