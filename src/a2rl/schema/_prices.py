"""List prices of LLM drivers (USD per million tokens), dated, each with the page it was read
from: what a run's tokens cost when its agent CLI reports no dollars of its own
(`RunCost.usd_source` = `prices:<PRICES_DATE>`).

Standard (not batch, not priority) rates for prompts under the providers' long-context
thresholds (Anthropic 200K where it applies, OpenAI 272K, Google 200K). Cached prompt tokens are
billed at `cached_input`; cache writes at `input` (Anthropic and OpenAI charge writes 1.25× the
input rate: the table's figure is then a slight underestimate for cache-heavy agents). Where a
page gives no cache-read rate, the provider's stated ratio is used (Anthropic and Google: a tenth
of the input rate).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PRICES_DATE = "2026-12-04"
"""When the prices below were read from their pages."""

_ANTHROPIC = "https://platform.claude.com/docs/en/about-claude/pricing"
_ANTHROPIC_SONNET_5_5 = "https://platform.claude.com/docs/en/about-claude/models/sonnet-5-5/overview"
_ANTHROPIC_OPUS_5 = "https://platform.claude.com/docs/en/about-claude/models/whats-new-opus-5"
_OPENAI = "https://developers.openai.com/api/docs/models/{}"
_GOOGLE = "https://ai.google.dev/gemini-api/docs/pricing"


@dataclass(frozen=True)
class Price:
    """One model's list price, USD per million tokens."""

    input: float
    """Prompt tokens (cache writes included)."""
    output: float
    """Completion tokens (reasoning included)."""
    cached_input: float
    """Prompt tokens read from the provider's cache."""
    source: str
    """The page the figures were read from (on PRICES_DATE)."""

    def usd(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float:
        """What these tokens cost; `cached_tokens` is the part of `input_tokens` read from cache."""
        cached = max(0, min(cached_tokens, input_tokens))
        return ((input_tokens - cached) * self.input + cached * self.cached_input
                + output_tokens * self.output) / 1e6


PRICES: dict[str, Price] = {
    # Anthropic: the default drivers of Claude Code, OpenCode and OpenHands
    "claude-sonnet-5-5": Price(2.0, 10.0, 0.20, _ANTHROPIC_SONNET_5_5),
    "claude-sonnet-5": Price(2.0, 10.0, 0.20, _ANTHROPIC),
    "claude-opus-5-5": Price(4.0, 20.0, 0.40, _ANTHROPIC_OPUS_5),
    "claude-opus-5": Price(5.0, 25.0, 0.50, _ANTHROPIC_OPUS_5),
    "claude-haiku-4-5": Price(1.0, 5.0, 0.10, _ANTHROPIC),
    "claude-sonnet-4-5": Price(3.0, 15.0, 0.30, _ANTHROPIC),
    "claude-sonnet-4": Price(3.0, 15.0, 0.30, _ANTHROPIC),
    "claude-opus-4-1": Price(15.0, 75.0, 1.50, _ANTHROPIC),
    # OpenAI: the default driver of Codex and common ones
    "gpt-6.2-sol": Price(2.0, 10.0, 0.10, _OPENAI.format("gpt-6.2-sol")),
    "gpt-6.1-sol": Price(2.0, 10.0, 0.10, _OPENAI.format("gpt-6.1-sol")),
    "gpt-6-sol": Price(2.0, 10.0, 0.20, _OPENAI.format("gpt-6-sol")),
    "gpt-5.1": Price(1.25, 10.0, 0.125, _OPENAI.format("gpt-5.1")),
    "gpt-5": Price(1.25, 10.0, 0.125, _OPENAI.format("gpt-5")),
    "gpt-5-codex": Price(1.25, 10.0, 0.125, _OPENAI.format("gpt-5-codex")),
    # Google: the default driver of Gemini CLI and common ones
    "gemini-3.1-pro-preview": Price(2.0, 12.0, 0.20, _GOOGLE),
    "gemini-2.5-pro": Price(1.25, 10.0, 0.125, _GOOGLE),
    "gemini-2.5-flash": Price(0.30, 2.50, 0.03, _GOOGLE),
}

_DATED = re.compile(r"(-\d{8}|-\d{4}-\d{2}-\d{2}|-latest)$")


def model_key(model: str) -> str:
    """A driver's name as the table keys it: provider prefix (`anthropic/`, `openrouter/x/`),
    date suffix (`-20250929`) and `-latest` dropped, lower case; Anthropic's dotted versions
    (`claude-sonnet-4.5`) written with a dash as its API ids are."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    name = _DATED.sub("", name)
    if name.startswith("claude-"):
        name = name.replace(".", "-")
    return name


def price_for(model: str | None) -> Price | None:
    """The table's price of `model` (None: not in the table; never a guess from a near name)."""
    if not model:
        return None
    return PRICES.get(model_key(model))
