"""Shared pieces of the scaffold tests: a scripted OpenAI-compatible endpoint for the evaluator
and the reviewer (with malformed, refused, failing and slow behaviours), and a stand-in grader
for the unit tests (the end-to-end test uses the real one)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from a2rl._util import utcnow
from a2rl.schema import SubmissionRecord

EXPECTATION = "I expect a small gain over the base model: the SFT script looks sound."
DIAGNOSIS = "The model answers in the right format but the arithmetic is often wrong."
SUGGESTIONS = [
    {"level": "strategy", "text": "Switch to GRPO with the exact-match reward.",
     "change": {"k": "GRPO"}},
    {"level": "execution", "text": "Lower the learning rate; the loss spikes early.",
     "target": "learning_rate"},
]


@dataclass
class Judge:
    """Answers by what the prompt asks (stage 1, stage 2, plan review); `mode` scripts a
    misbehaviour for every request: ok, malformed, refused, plain, http500, slow, garbage."""

    mode: str = "ok"
    verdicts: list[str] = field(default_factory=lambda: ["approve"])
    slow_s: float = 2.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: dict[str, Any]) -> Any:
        user = body["messages"][-1]["content"]
        with self.lock:
            self.requests.append(body)
            reviews = sum(1 for r in self.requests if "The plan:" in r["messages"][-1]["content"])
        if self.mode == "http500":
            return JSONResponse({"error": "overloaded"}, status_code=500)
        if self.mode == "slow":
            time.sleep(self.slow_s)
        if self.mode == "garbage":
            return JSONResponse({"unexpected": True})
        if self.mode == "refused":
            return _completion(None, refusal="I can't help with that.")
        if self.mode == "plain":
            return _completion("Sorry, I would rather not judge this.")
        if self.mode == "malformed":
            return _completion('{"diagnosis": ')
        if "Stage 1 of 2" in user and "Stage 2 of 2" not in user:
            reply: dict[str, Any] = {"expectation": EXPECTATION}
        elif "Stage 2 of 2" in user:
            reply = {"diagnosis": DIAGNOSIS, "suggestions": SUGGESTIONS}
        else:
            verdict = self.verdicts[min(reviews - 1, len(self.verdicts) - 1)]
            reply = {"verdict": verdict, "rationale": f"scripted {verdict}",
                     "requested_changes": [] if verdict == "approve" else ["use RL"]}
        return _completion("Here is my answer:\n" + json.dumps(reply))

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request) -> Any:
            body = await request.json()
            body["_auth"] = request.headers.get("authorization")
            return self.answer(body)

        return app


def _completion(content: str | None, refusal: str | None = None) -> JSONResponse:
    return JSONResponse({"id": "x", "object": "chat.completion", "model": "scripted-judge",
                         "choices": [{"index": 0, "finish_reason": "stop", "message": {
                             "role": "assistant", "content": content, "refusal": refusal}}],
                         "usage": {"prompt_tokens": 100, "completion_tokens": 20}})


def record(sid: str, status: str = "scored", score: float | None = 50.0,
           elapsed: float = 0.0) -> SubmissionRecord:
    return SubmissionRecord(id=sid, seq=int(sid[1:]), received_at=utcnow(), elapsed_s=elapsed,
                            model_path=f"output/{sid}", status=status,  # type: ignore[arg-type]
                            score=score, baseline=10.0, task_fingerprint="f")


class FakeGrader:
    """What the scaffold uses of a Grader: the clock, the feedback records, events, baseline."""

    def __init__(self, budget_s: float = 100.0) -> None:
        self.t = 0.0
        self.budget_s = budget_s
        self.events: Any = None
        self.records: list[SubmissionRecord] = []
        self.baseline = SimpleNamespace(score=10.0)
        self.base = SimpleNamespace(path=Path("/nonexistent"))

    def elapsed(self) -> float:
        return self.t

    def feedback_records(self) -> list[SubmissionRecord]:
        return list(self.records)

    def finish(self, rec: SubmissionRecord, *, evaluate: bool = False, scaffold: Any = None) -> None:
        """A submission arriving and finishing, as the grader's hooks report it."""
        if evaluate:
            scaffold._intent.evaluate = True
        self.events.submission_received(rec)
        scaffold._intent.evaluate = False
        self.records.append(rec)
        self.events.submission_finished(rec, None)
