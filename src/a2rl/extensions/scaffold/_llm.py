"""The scaffold's LLM (evaluator agent and plan reviewer) on any OpenAI-compatible endpoint.

Configured like the judges, by the operator only: base URL and model from `--scaffold-opt`
or `A2RL_SCAFFOLD_BASE_URL` / `A2RL_SCAFFOLD_MODEL`; the key from `A2RL_SCAFFOLD_API_KEY`
only (the sandbox's environment is an explicit allow-list, so it never gets there). Every call
is logged in `scaffold/llm_calls.jsonl`; a failure (no endpoint, unreachable, slow, refused,
malformed) is returned as a value, never raised: the scaffold records it and the run goes on.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from a2rl._util import utcnow
from a2rl.schema import LLMCall, ScaffoldConfig, append_jsonl

ENV_BASE_URL = "A2RL_SCAFFOLD_BASE_URL"
ENV_MODEL = "A2RL_SCAFFOLD_MODEL"
ENV_API_KEY = "A2RL_SCAFFOLD_API_KEY"

Role = Literal["evaluator-expectation", "evaluator-diagnosis", "reviewer"]
Failure = Literal["unconfigured", "unreachable", "timeout", "http_error", "refused", "malformed"]
_JSON_BLOCK = re.compile(r"\{.*\}", re.DOTALL)


@dataclass(frozen=True)
class Reply:
    """A parsed reply, or why there is none."""

    value: BaseModel | None
    failure: Failure | None = None
    error: str | None = None


class ScaffoldLLM:
    """Blocking JSON-answering client; one request at a time per instance (thread-safe)."""

    def __init__(self, config: ScaffoldConfig, log_path: Path) -> None:
        self.base_url = _base_url(config.llm_base_url or os.environ.get(ENV_BASE_URL) or "")
        self.model = (config.llm_model or os.environ.get(ENV_MODEL) or "").strip()
        self.timeout_s, self.retries = config.llm_timeout_s, config.llm_retries
        self.max_tokens = config.llm_max_tokens
        self._key = os.environ.get(ENV_API_KEY) or ""
        self._log = log_path
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never the key
        return f"ScaffoldLLM(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def name(self) -> str:
        return f"llm:{self.model or '?'}"

    def ask(self, role: Role, system: str, user: str, schema: type[BaseModel]) -> Reply:
        """One chat completion whose reply must be a JSON object that `schema` validates."""
        with self._lock:
            started, at = time.monotonic(), utcnow()
            usage: dict[str, Any] = {}
            reply = self._ask(system, user, schema, usage)
            append_jsonl(self._log, LLMCall(
                role=role, at=at, seconds=round(time.monotonic() - started, 3),
                ok=reply.value is not None, failure=reply.failure, error=reply.error,
                input_tokens=usage.get("prompt_tokens"),
                output_tokens=usage.get("completion_tokens")))
            return reply

    def _ask(self, system: str, user: str, schema: type[BaseModel],
             usage: dict[str, Any]) -> Reply:
        import httpx

        if not self.base_url or not self.model:
            return Reply(None, "unconfigured",
                         f"no scaffold LLM configured: set {ENV_BASE_URL} and {ENV_MODEL} (or "
                         "--scaffold-opt llm_base_url=... llm_model=...)")
        body = {"model": self.model, "temperature": 0.0, "max_tokens": self.max_tokens,
                "stream": False, "messages": [{"role": "system", "content": system},
                                              {"role": "user", "content": user}]}
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        endpoint = f"{self.base_url}/chat/completions"
        failure: Failure = "unreachable"
        error = ""
        for _attempt in range(self.retries + 1):
            try:
                resp = httpx.post(endpoint, json=body, headers=headers, timeout=self.timeout_s)
            except httpx.TimeoutException:
                failure, error = "timeout", f"no reply within {self.timeout_s:.0f} s"
                continue
            except httpx.TransportError as exc:
                failure, error = "unreachable", f"{type(exc).__name__} at {endpoint}"
                continue
            if resp.status_code == 429 or resp.status_code >= 500:
                failure, error = "http_error", f"HTTP {resp.status_code} from {endpoint}"
                continue
            if resp.status_code != 200:
                return Reply(None, "http_error", f"HTTP {resp.status_code} from {endpoint} "
                             f"(check the URL, model name and {ENV_API_KEY})")
            return _parse(resp, schema, usage)
        return Reply(None, failure, error)


def _base_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if url.endswith("/chat/completions"):
        url = url[: -len("/chat/completions")]
    return url


def _parse(resp: Any, schema: type[BaseModel], usage: dict[str, Any]) -> Reply:
    try:
        payload = resp.json()
        message = payload["choices"][0]["message"]
        if isinstance(payload.get("usage"), dict):
            usage.update(payload["usage"])
    except (ValueError, KeyError, IndexError, TypeError):
        return Reply(None, "malformed", "not an OpenAI chat completion")
    if not isinstance(message, dict):
        return Reply(None, "malformed", "not an OpenAI chat completion")
    if message.get("refusal"):
        return Reply(None, "refused", "the model refused: " + str(message["refusal"])[:200])
    text = message.get("content")
    if not isinstance(text, str) or not text.strip():
        return Reply(None, "refused", "empty reply")
    found = _JSON_BLOCK.search(text)
    if found is None:
        if "{" in text:  # a JSON object begun and never finished (cut off, or broken)
            return Reply(None, "malformed", "an unfinished JSON object in the reply")
        # a plain-text answer is how most models decline a request
        return Reply(None, "refused", "no JSON object in the reply: " + text.strip()[:200])
    try:
        return Reply(schema.model_validate(json.loads(found.group(0))))
    except (ValueError, ValidationError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        where = ".".join(map(str, first["loc"])) + ": " + first["msg"] if first else str(exc)
        return Reply(None, "malformed", f"the reply is not the JSON asked for ({where[:200]})")
