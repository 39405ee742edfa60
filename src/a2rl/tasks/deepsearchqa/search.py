"""Search backends for search-agent tasks (DeepSearchQA): one interface, a web API and a local corpus.

`SearchBackend.search(query, k)` returns up to k results, each `{"title", "id", "url", "snippet"}`.
Two implementations, and why both:

- `WebSearchBackend`: a generic JSON search API on the open web (what DeepSearchQA was built
  for). Configured by the operator only, like the judge: the endpoint comes from
  `A2RL_SEARCH_API_URL` and the key **only** from `A2RL_SEARCH_API_KEY` (never a task param, so
  it is never recorded; never logged, never in an error message; error messages do not contain
  the query either, since queries may quote held-out questions). Results are cached on disk
  under `$A2RL_HOME/search/`, so a re-evaluation that issues the same queries sees the same
  results (the web changes; a cache keeps baseline and submission comparable) and costs nothing.
- `BM25CorpusBackend`: BM25 (PyPI `bm25s`) over a local document collection: deterministic,
  reproducible, free and offline. The offline DeepSearchQA source ships its own corpus; for
  the hub source the operator points it at a JSONL corpus (one `{"id", "title", "text"}` object
  a line, optional `"url"`), e.g. a Wikipedia dump converted to that format.

Wire format of the web API (Tavily-style): `POST {A2RL_SEARCH_API_URL}` with the JSON body
`{"query": ..., "max_results": k}` and `Authorization: Bearer <key>` when a key is set. The reply
may be any of the common shapes: `{"results": [...]}` (Tavily), `{"organic": [...]}` (Serper),
`{"web": {"results": [...]}}` (Brave) or a bare list; each hit's text is read from `snippet`,
`content` or `description`, its address from `url` or `link`. A thin adapter in front of any
other provider only needs to accept that request.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypedDict
from urllib.parse import urlsplit, urlunsplit

from a2rl._errors import A2RLError
from a2rl._paths import cache_dir
from a2rl._util import stable_hash

log = logging.getLogger("a2rl.search")

ENV_SEARCH_URL = "A2RL_SEARCH_API_URL"
ENV_SEARCH_KEY = "A2RL_SEARCH_API_KEY"
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
WEB_FIX = (f"point {ENV_SEARCH_URL} at a JSON search API that accepts POST {{\"query\", \"max_results\"}} "
           f"(Tavily-style; set {ENV_SEARCH_KEY} if it needs a key), or use the local corpus backend: "
           "--task-opt search=corpus")
CORPUS_FIX = ('give a JSONL file with one {"id", "title", "text"} object a line: '
              "--task-opt corpus_path=/path/to/corpus.jsonl")


class SearchResult(TypedDict):
    title: str
    id: str
    """Document id (corpus) or the URL again (web): what a result is cited by."""
    url: str
    """Empty for corpus documents without one."""
    snippet: str


class SearchBackend(Protocol):
    name: str
    """`web` or `corpus`."""

    def search(self, query: str, k: int) -> list[SearchResult]:
        """Up to k results, best first. Deterministic for the corpus backend."""
        ...

    def describe(self) -> dict[str, Any]:
        """What identifies this backend in records and fingerprints (never a secret)."""
        ...

    def close(self) -> None: ...


class SearchError(A2RLError):
    """The search backend could not be used. Messages never contain keys or queries."""


def _snippet(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return (cut or text[:limit]) + " …"


# ---- local corpus (BM25) --------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str
    url: str = ""


def parse_corpus(lines: Iterable[str], label: str) -> list[Document]:
    """Documents from JSONL lines: one `{"id", "title", "text"}` object a line (`url` optional)."""
    docs: list[Document] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise SearchError(f"the search corpus {label} is not JSONL (line {n}: {exc})",
                              CORPUS_FIX) from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise SearchError(f"the search corpus {label}, line {n}: expected an object with a string `text`",
                              CORPUS_FIX)
        docs.append(Document(id=str(row.get("id", n)), title=str(row.get("title", "") or ""),
                             text=row["text"], url=str(row.get("url", "") or "")))
    if not docs:
        raise SearchError(f"the search corpus {label} is empty", CORPUS_FIX)
    return docs


def load_corpus_jsonl(path: Path) -> list[Document]:
    """Read a JSONL corpus file (see `parse_corpus`)."""
    try:
        with path.open(encoding="utf-8") as fh:
            return parse_corpus(fh, str(path))
    except OSError as exc:
        raise SearchError(f"cannot read the search corpus {path}: {type(exc).__name__}", CORPUS_FIX) from exc


def corpus_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class BM25CorpusBackend:
    """BM25 (Lucene variant, k1=1.5, b=0.75) over title + text, English stopwords, no stemming.

    The index is built in memory once, at construction; searching is read-only, so one
    instance serves every episode. Ties are broken by document order, documents that share no
    term with the query are not returned, and a query with no indexable term returns nothing:
    the same query always gives the same results."""

    name = "corpus"

    def __init__(self, documents: Sequence[Document], *, snippet_chars: int = 300,
                 label: str = "corpus", sha256: str | None = None) -> None:
        try:
            import bm25s
        except ImportError as exc:
            raise SearchError("the corpus search backend needs the bm25s package",
                              "pip install bm25s") from exc

        if not documents:
            raise SearchError("cannot search an empty corpus", "give a non-empty corpus")
        self.documents = list(documents)
        self.snippet_chars = snippet_chars
        self.label = label
        self.sha256 = sha256 or stable_hash([(d.id, d.title, d.text) for d in self.documents])
        tokens = bm25s.tokenize([f"{d.title}\n{d.text}" for d in self.documents], stopwords="en",
                                show_progress=False)
        self._bm25 = bm25s.BM25()
        self._bm25.index(tokens, show_progress=False)
        self._lock = threading.Lock()

    @classmethod
    def from_jsonl(cls, path: Path, *, snippet_chars: int = 300) -> BM25CorpusBackend:
        return cls(load_corpus_jsonl(path), snippet_chars=snippet_chars, label=str(path),
                   sha256=corpus_sha256(path))

    def search(self, query: str, k: int) -> list[SearchResult]:
        import bm25s

        k = min(max(1, k), len(self.documents))
        q = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)
        if not q or not q[0]:
            return []
        with self._lock:  # bm25s keeps no per-query state we rely on, but be safe across threads
            idx, scores = self._bm25.retrieve(q, k=k, show_progress=False, n_threads=1)
        ranked = sorted(((float(s), int(i)) for i, s in zip(idx[0], scores[0], strict=True) if s > 0),
                        key=lambda t: (-t[0], t[1]))
        out: list[SearchResult] = []
        for _, i in ranked:
            d = self.documents[i]
            out.append({"title": d.title, "id": d.id, "url": d.url,
                        "snippet": _snippet(d.text, self.snippet_chars)})
        return out

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "corpus": self.label, "corpus_sha256": self.sha256,
                "n_documents": len(self.documents), "ranking": "bm25s lucene k1=1.5 b=0.75, en stopwords",
                "snippet_chars": self.snippet_chars}

    def close(self) -> None: ...


# ---- web API --------------------------------------------------------------------------------


def public_url(url: str) -> str:
    """The URL without user:password@ and without a query string (where keys sometimes go)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def web_search_configured() -> bool:
    return bool(os.environ.get(ENV_SEARCH_URL, "").strip())


def parse_web_results(payload: Any) -> list[SearchResult]:
    """Hits from the common JSON shapes (Tavily `results`, Serper `organic`, Brave
    `web.results`, a bare list). Hits without any text are skipped."""
    hits: Any = payload
    if isinstance(payload, dict):
        web = payload.get("web")
        if isinstance(payload.get("results"), list):
            hits = payload["results"]
        elif isinstance(payload.get("organic"), list):
            hits = payload["organic"]
        elif isinstance(web, dict) and isinstance(web.get("results"), list):
            hits = web["results"]
        else:
            raise ValueError("no `results`, `organic` or `web.results` list in the reply")
    if not isinstance(hits, list):
        raise ValueError("the reply is not a list of results")
    out: list[SearchResult] = []
    for h in hits:
        if not isinstance(h, dict):
            continue
        snippet = next((str(h[f]) for f in ("snippet", "content", "description", "text") if h.get(f)), "")
        url = str(h.get("url") or h.get("link") or "")
        if not snippet and not h.get("title"):
            continue
        out.append({"title": str(h.get("title") or ""), "id": url, "url": url, "snippet": snippet})
    return out


class WebSearchBackend:
    """A JSON web-search API (see the module docstring for the wire format). Thread-safe."""

    name = "web"

    def __init__(self, *, base_url: str | None = None, api_key: str | None = None, timeout_s: float = 30.0,
                 max_retries: int = 4, backoff_s: float = 1.0, max_backoff_s: float = 30.0,
                 snippet_chars: int = 300, cache: bool = True,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        import httpx

        url = (base_url or os.environ.get(ENV_SEARCH_URL) or "").strip()
        if not url:
            raise SearchError(f"no web search API configured ({ENV_SEARCH_URL} is not set)", WEB_FIX)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise SearchError(f"{ENV_SEARCH_URL} is not an http(s) URL", WEB_FIX)
        self.url = url
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self.backoff_s, self.max_backoff_s = backoff_s, max_backoff_s
        self.snippet_chars = snippet_chars
        self.requests = 0
        self.cache_hits = 0
        self._sleep = sleep
        key = api_key if api_key is not None else os.environ.get(ENV_SEARCH_KEY)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(timeout=timeout_s, headers=headers)
        self._cache: Any = None
        if cache:
            from a2rl.tasks._lib.judge import JudgementCache  # the same private sqlite key-value store

            folder = cache_dir("search")
            folder.mkdir(parents=True, exist_ok=True)
            folder.chmod(0o700)
            self._cache = JudgementCache(folder / "results.sqlite")
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never show the key
        return f"WebSearchBackend(url={public_url(self.url)!r})"

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "api_url": public_url(self.url), "wire_format": "tavily-style POST",
                "snippet_chars": self.snippet_chars, "cache": self._cache is not None}

    def search(self, query: str, k: int) -> list[SearchResult]:
        import httpx

        key = stable_hash({"url": public_url(self.url), "query": query, "k": k})
        if self._cache is not None:
            hit = self._cache.get(key)
            if hit is not None:
                with self._lock:
                    self.cache_hits += 1
                return self._clip(hit["results"], k)
        where = f"search API at {public_url(self.url)}"
        for attempt in range(self.max_retries + 1):
            with self._lock:
                self.requests += 1
            try:
                resp = self._http.post(self.url, json={"query": query, "max_results": k})
            except httpx.TransportError as exc:
                problem = type(exc).__name__
            else:
                if resp.status_code == 200:
                    try:
                        results = parse_web_results(resp.json())
                    except ValueError as exc:
                        raise SearchError(f"{where} sent a reply that is not a search result list ({exc})",
                                          WEB_FIX) from None
                    if self._cache is not None:
                        self._cache.put(key, {"results": results})
                    return self._clip(results, k)
                if resp.status_code not in RETRYABLE_STATUS:
                    raise SearchError(f"{where} answered HTTP {resp.status_code}",
                                      f"check {ENV_SEARCH_URL} and {ENV_SEARCH_KEY}")
                problem = f"HTTP {resp.status_code}"
            if attempt == self.max_retries:
                raise SearchError(f"{where} failed {self.max_retries + 1} times; last: {problem}",
                                  "check that the search API is up, or raise search_max_retries")
            delay = min(self.max_backoff_s, self.backoff_s * 2 ** attempt * random.uniform(0.8, 1.2))
            log.warning("%s: %s; retry %d/%d in %.2f s", where, problem, attempt + 1, self.max_retries, delay)
            self._sleep(delay)
        raise AssertionError("unreachable")

    def _clip(self, results: Iterable[SearchResult], k: int) -> list[SearchResult]:
        return [{**r, "snippet": _snippet(r["snippet"], self.snippet_chars)} for r in list(results)[:k]]

    def close(self) -> None:
        self._http.close()
        if self._cache is not None:
            self._cache.close()


def format_results(results: Sequence[SearchResult]) -> str:
    """The observation text for a result list: numbered title, id and snippet."""
    if not results:
        return "No results."
    lines = []
    for i, r in enumerate(results, 1):
        ref = r["url"] or r["id"]
        lines.append(f"[{i}] {r['title']} ({ref})\n{r['snippet']}")
    return "\n".join(lines)
