"""An LLM judge behind any OpenAI-compatible chat endpoint, with retries and a persistent cache.

Used by judge-scored tasks (AlpacaEval, later DeepSearchQA). Design points, and why:

- The endpoint is configured by the operator, never by the agent: base URL and model come from
  task params or `A2RL_JUDGE_BASE_URL` / `A2RL_JUDGE_MODEL`; the API key comes **only** from
  `A2RL_JUDGE_API_KEY`. Task params are recorded in run.json, so a key there would leak; the
  evaluation child inherits the harness environment, while the agent's sandbox gets an explicit
  allow-list of variables and never sees the key.
- Any OpenAI-compatible server works (OpenAI, a local vLLM, `transformers serve`): one POST to
  `{base_url}/chat/completions`, greedy, a few output tokens.
- Transient failures (HTTP 429, 5xx, connection errors, timeouts) are retried with exponential
  backoff, so one hiccup on an 805-item evaluation does not cost the whole evaluation. Other
  errors (401, 404, 400) are configuration problems and fail at once.
- Judgements are cached on disk under `$A2RL_HOME/judge/` (outside every workspace): baseline
  and repeated submissions re-judge identical (prompt, outputs) pairs for free, and a re-run
  reproduces earlier verdicts. Only parseable verdicts are cached, so a judge that misbehaved
  once is asked again next time rather than having its failure frozen in.
- Error messages never include the key, the prompt or the judge's reply: the grader may show
  the last error line of an evaluation to the agent, and prompts contain held-out data.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from a2rl._errors import A2RLError
from a2rl._paths import cache_dir
from a2rl._util import stable_hash, utcnow

log = logging.getLogger("a2rl.judge")

ENV_BASE_URL = "A2RL_JUDGE_BASE_URL"
ENV_MODEL = "A2RL_JUDGE_MODEL"
ENV_API_KEY = "A2RL_JUDGE_API_KEY"

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""Statuses worth retrying: rate limits, overload and gateway failures."""

CONFIG_FIX = ("point the judge at an OpenAI-compatible endpoint: "
              f"export {ENV_BASE_URL}=http://127.0.0.1:8000/v1 {ENV_MODEL}=<served model name> "
              f"(and {ENV_API_KEY}=... if the server needs a key); "
              "a local `vllm serve <model>` or `transformers serve` works")


class JudgeError(A2RLError):
    """The judge could not be reached or configured. Messages never contain keys or prompts."""


@dataclass(frozen=True)
class JudgeSettings:
    """Where the judge is and how to talk to it. Holds no secret, so it can be logged/recorded."""

    base_url: str
    """OpenAI-style base URL, e.g. `http://127.0.0.1:8000/v1` (`/chat/completions` is appended;
    a URL with no path at all gets `/v1`)."""
    model: str
    """Model name sent in each request (and part of every cache key)."""
    timeout_s: float = 120.0
    max_retries: int = 6
    """Retries after the first attempt for transient failures (429, 5xx, connection errors)."""
    backoff_s: float = 1.0
    """First retry delay; doubles each retry (±20 % jitter), capped at `max_backoff_s`."""
    max_backoff_s: float = 60.0
    max_tokens: int = 16
    temperature: float = 0.0

    @classmethod
    def resolve(cls, *, base_url: str | None = None, model: str | None = None,
                **options: Any) -> JudgeSettings:
        """Settings from explicit values (task params) falling back to the environment."""
        url = base_url or os.environ.get(ENV_BASE_URL) or ""
        name = model or os.environ.get(ENV_MODEL) or ""
        if not url.strip():
            raise JudgeError(f"no judge endpoint configured ({ENV_BASE_URL} is not set)", CONFIG_FIX)
        if not name.strip():
            raise JudgeError(f"no judge model configured ({ENV_MODEL} is not set)", CONFIG_FIX)
        return cls(base_url=normalize_base_url(url.strip()), model=name.strip(), **options)

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"


def configured_judge_model(model: str | None = None) -> str | None:
    """The judge model that would be used now (param, else env), or None. For fingerprints."""
    name = model or os.environ.get(ENV_MODEL)
    return name.strip() if name and name.strip() else None


def normalize_base_url(url: str) -> str:
    url = url.rstrip("/")
    if url.endswith("/chat/completions"):
        url = url[: -len("/chat/completions")]
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise JudgeError(f"judge base URL {url!r} is not an http(s) URL", CONFIG_FIX)
    if not parts.path:
        url += "/v1"
    return url


@dataclass
class JudgeStats:
    """Counters reported as evaluation metrics (thread-safe)."""

    requests: int = 0
    """HTTP requests sent, failed ones included."""
    http_retries: int = 0
    cache_hits: int = 0
    unparseable_replies: int = 0
    """Replies the strict parser rejected (each may have been retried)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + n)


class JudgeClient:
    """Blocking chat-completions client. Thread-safe: one instance serves a pool of workers."""

    def __init__(self, settings: JudgeSettings, *, api_key: str | None = None,
                 stats: JudgeStats | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        import httpx

        self.settings = settings
        self.stats = stats or JudgeStats()
        self._sleep = sleep
        key = api_key if api_key is not None else os.environ.get(ENV_API_KEY)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(timeout=settings.timeout_s, headers=headers)

    def __repr__(self) -> str:  # never show the key
        return f"JudgeClient(model={self.settings.model!r}, base_url={self.settings.base_url!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def chat(self, messages: Sequence[dict[str, str]]) -> str:
        """One completion's text. Retries transient failures; raises JudgeError otherwise."""
        return str(self._complete(messages, None, _reply_text))

    def chat_choice(self, messages: Sequence[dict[str, str]], **overrides: Any) -> dict[str, Any]:
        """The first choice of one completion as a dict (message, logprobs, ...), with request
        fields overridden (e.g. `logprobs=True, top_logprobs=5, max_tokens=1` for a judge
        protocol that reads token probabilities). Same retries and errors as `chat`."""
        choice: dict[str, Any] = self._complete(messages, overrides, _first_choice)
        return choice

    def _complete(self, messages: Sequence[dict[str, str]], overrides: dict[str, Any] | None,
                  extract: Callable[[Any], Any]) -> Any:
        import httpx

        s = self.settings
        body: dict[str, Any] = {"model": s.model, "messages": list(messages), "temperature": s.temperature,
                                "max_tokens": s.max_tokens, "stream": False}
        body.update(overrides or {})
        where = f"judge {s.model!r} at {s.endpoint}"
        for attempt in range(s.max_retries + 1):
            last = attempt == s.max_retries
            self.stats.add("requests")
            retry_after: float | None = None
            try:
                resp = self._http.post(s.endpoint, json=body)
            except httpx.TransportError as exc:  # connect/read errors and timeouts
                problem = f"{type(exc).__name__}"
            else:
                if resp.status_code == 200:
                    try:
                        return extract(resp.json())
                    except (ValueError, KeyError, IndexError, TypeError):
                        problem = "a malformed 200 response (not an OpenAI chat completion)"
                elif resp.status_code in RETRYABLE_STATUS:
                    problem = f"HTTP {resp.status_code}"
                    retry_after = _retry_after(resp.headers.get("retry-after"))
                else:
                    raise JudgeError(f"{where} answered HTTP {resp.status_code}",
                                     "check the judge URL, model name and API key ("
                                     f"{ENV_BASE_URL}, {ENV_MODEL}, {ENV_API_KEY})")
            if last:
                raise JudgeError(f"{where} failed {s.max_retries + 1} times; last: {problem}",
                                 "check that the judge server is up, or raise judge_max_retries")
            delay = s.backoff_s * 2 ** attempt * random.uniform(0.8, 1.2)
            if retry_after is not None:  # the server knows best when to come back
                delay = max(delay, retry_after)
            delay = min(s.max_backoff_s, delay)
            log.warning("%s: %s; retry %d/%d in %.2f s", where, problem, attempt + 1, s.max_retries, delay)
            self.stats.add("http_retries")
            self._sleep(delay)
        raise AssertionError("unreachable")


def _first_choice(payload: Any) -> dict[str, Any]:
    choice = payload["choices"][0]
    if not isinstance(choice, dict) or not isinstance(choice["message"], dict):
        raise TypeError("not a chat completion choice")
    return choice


def _reply_text(payload: Any) -> str:
    content = payload["choices"][0]["message"]["content"]
    if content is None:  # e.g. a reasoning model that spent its tokens thinking
        return ""
    if not isinstance(content, str):
        raise TypeError("content is not a string")
    return content


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


class JudgementCache:
    """Verdicts keyed by `judgement_key(...)`, in sqlite under $A2RL_HOME/judge/.

    sqlite because several evaluation children (baseline and submissions, several runs) may
    write at once: its file locking makes concurrent inserts safe without our own lock file.
    The file is created 0600: it contains held-out instructions and model outputs.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or cache_dir("judge") / "judgements.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if path is None:  # our own folder: keep the WAL/journal files private too
            self.path.parent.chmod(0o700)
        if not self.path.exists():
            self.path.touch(mode=0o600)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False,
                                   isolation_level=None)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS judgements (key TEXT PRIMARY KEY, "
                             "value TEXT NOT NULL, created_at TEXT NOT NULL)")

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM judgements WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO judgements (key, value, created_at) VALUES (?, ?, ?)",
                             (key, json.dumps(value), utcnow().isoformat()))

    def close(self) -> None:
        with self._lock:
            self._db.close()


def judgement_key(*, template_sha256: str, model: str, fields: Sequence[str]) -> str:
    """Cache key: prompt template, judge model, and the task's fields (e.g. instruction and both
    outputs in the order presented). A new template or judge model never reuses old verdicts."""
    return stable_hash({"template": template_sha256, "model": model, "fields": list(fields)})


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Judgement:
    """The outcome of judging one prompt."""

    verdict: str | None
    """The parsed verdict, or None when every reply was unparseable."""
    replies: list[str]
    """The judge's raw replies, in order (for a cache hit: those stored with the verdict)."""
    cached: bool


def judge_strict(client: JudgeClient, cache: JudgementCache | None, *, key: str,
                 messages: Sequence[dict[str, str]], parse: Callable[[str], str | None],
                 parse_retries: int) -> Judgement:
    """Ask the judge, parse its reply strictly; re-ask up to `parse_retries` times when the reply
    does not parse. Parseable verdicts are cached under `key`."""
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            client.stats.add("cache_hits")
            return Judgement(verdict=str(hit["verdict"]), replies=list(hit.get("replies", [])),
                             cached=True)
    replies: list[str] = []
    for _ in range(parse_retries + 1):
        reply = client.chat(messages)
        replies.append(reply)
        verdict = parse(reply)
        if verdict is not None:
            if cache is not None:
                cache.put(key, {"verdict": verdict, "replies": replies, "model": client.settings.model})
            return Judgement(verdict=verdict, replies=replies, cached=False)
        client.stats.add("unparseable_replies")
    return Judgement(verdict=None, replies=replies, cached=False)
