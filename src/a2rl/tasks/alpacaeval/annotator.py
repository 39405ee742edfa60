"""alpaca_eval's own judge protocol: the `weighted_alpaca_eval_gpt4_turbo` annotator (AlpacaEval
2.0's default), run on a2rl's judge endpoint.

What alpaca_eval does for one (instruction, output_1 = reference, output_2 = model) pair, and
what this module does the same way by calling alpaca_eval's own functions (so nothing is
re-typed from it):

1. order: the two outputs are swapped when `random_seeded_choice("is_switched_outputs" +
   instruction + "0", [False, True])` says so (its `RandomSwitchTwoColumnsProcessor`, seeded by
   the instruction and the annotator's seed 0);
2. prompt: the template `alpaca_eval_clf_gpt4_turbo/alpaca_eval_clf.txt` filled by
   `utils.make_prompts` and split into chat messages by `utils.prompt_to_chatml`;
3. request: one completion token, temperature 1, `logprobs` with the top 5 (the config's
   completion arguments; the model name is the operator's judge);
4. parse: `completion_parsers.logprob_parser(numerator_token="m", denominator_tokens=["m",
   "M"], is_binarize=False)`: preference = 2 − P(m) / (P(m) + P(M)), a number in [1, 2];
   NaN when neither token is among the top log-probabilities;
5. a swapped pair's preference is mirrored back (3 − x).

The judge endpoint must return token log-probabilities (OpenAI, vLLM and most OpenAI-compatible
servers do); a reply without them has no preference.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from typing import Any

ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"
TEMPLATE_RESOURCE = ("evaluators_configs", "alpaca_eval_clf_gpt4_turbo", "alpaca_eval_clf.txt")
COMPLETION_KWARGS: dict[str, Any] = {"max_tokens": 1, "temperature": 1.0, "logprobs": True, "top_logprobs": 5}
"""The annotator config's completion arguments (the model is the operator's judge)."""
PARSER_KWARGS: dict[str, Any] = {"numerator_token": "m", "denominator_tokens": ["m", "M"],
                                 "is_binarize": False}
SWITCH_COLUMN = "is_switched_outputs"
ANNOTATOR_SEED = 0
"""alpaca_eval's PairwiseAnnotator default seed, which its order-switching processor uses."""


def available() -> bool:
    import importlib.util

    return importlib.util.find_spec("alpaca_eval") is not None


@lru_cache(maxsize=1)
def template() -> str:
    """The annotator's prompt template, read from the installed alpaca_eval package."""
    return resources.files("alpaca_eval").joinpath(*TEMPLATE_RESOURCE).read_text(encoding="utf-8")


def is_switched(instruction: str) -> bool:
    """Whether alpaca_eval shows the model's output first (as `m`) for this instruction."""
    from alpaca_eval import utils

    return bool(utils.random_seeded_choice(seed=SWITCH_COLUMN + instruction + str(ANNOTATOR_SEED),
                                           choices=[False, True]))


def messages(instruction: str, output_1: str, output_2: str) -> list[dict[str, str]]:
    """The chat messages alpaca_eval sends for this (already ordered) pair."""
    import pandas as pd
    from alpaca_eval import utils

    prompts, _ = utils.make_prompts(
        pd.DataFrame([{"instruction": instruction, "output_1": output_1, "output_2": output_2}]), template())
    return [dict(m) for m in utils.prompt_to_chatml(prompts[0])]


def parse_choice(reply: str) -> str | None:
    """A judge reply (the chat completion's choice as JSON, see `choice_text`) -> the parsed
    preference of the pair as shown (a string, so it caches as a verdict), or None."""
    import warnings

    from alpaca_eval.completion_parsers import logprob_parser

    try:
        choice = json.loads(reply)
    except ValueError:
        return None
    if not isinstance(choice, dict) or not isinstance(choice.get("logprobs"), dict) \
            or not choice["logprobs"].get("content"):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            [value] = logprob_parser(choice, **PARSER_KWARGS)
        except (AssertionError, KeyError, TypeError, ValueError, IndexError):
            return None
    value = float(value)
    if math.isnan(value) or not 1.0 <= value <= 2.0:
        return None
    return repr(value)


def preference(shown: str, *, switched: bool) -> float:
    """alpaca_eval's preference (1 = reference wins, 2 = model wins) from the parsed value of
    the pair as shown."""
    value = float(shown)
    return 3.0 - value if switched else value


def choice_text(choice: dict[str, Any]) -> str:
    """What the client hands the parser: the choice's log-probabilities and message as JSON."""
    return json.dumps({"logprobs": choice.get("logprobs"), "message": choice.get("message")})


class LogprobChat:
    """Adapter for `judge_strict`: `chat()` asks with the annotator's completion arguments and
    returns the choice as JSON (`choice_text`), which `parse_choice` reads."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.stats = client.stats
        self.settings = client.settings

    def chat(self, messages: Any) -> str:
        return choice_text(self._client.chat_choice(messages, **COMPLETION_KWARGS))
