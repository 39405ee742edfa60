"""GSM8K scoring: lm-evaluation-harness's `gsm8k` verdicts, reproduced exactly.

The reference is lm-eval 0.4.13, task `gsm8k` (its YAML `metadata.version` 3.0): a completion is
passed through one of two filters and the filtered string is compared with the gold answer by
lm-eval's `exact_match` metric with the task's settings. Everything below follows that code:

- `strict-match`: regex `#### (\\-?[0-9\\.\\,]+)`, the first match (`findall(...)[0]`), then
  `take_first`;
- `flexible-extract`: regex `(-?[$0-9.,]{2,})|(-?[0-9]+)`, the LAST match (`group_select: -1`),
  the first non-empty group of that match, then `take_first`;
- both filters strip the extracted string and fall back to the literal `[invalid]` when the
  regex finds nothing;
- `exact_match` with `ignore_case: true`, `ignore_punctuation: false` and `regexes_to_ignore`
  `,`, `\\$`, `(?s).*#### `, `\\.$`: each regex is removed (`re.sub(..., "")`, in that order)
  from the prediction AND from the reference, both are lower-cased, then compared as strings.
  The reference is the data set's whole `answer` (`doc_to_target: "{{answer}}"`), so the third
  regex keeps what follows its last `#### `.

So `#### 199.0`, `199.00`, `0199`, `199..` are all wrong for gold `199`, while `$1,000.` is right
for `1,000`. lm-eval keeps the strings in numpy arrays, whose fixed-width unicode type drops
trailing NUL characters; `_lm_eval_normalize` does the same so that no input can tell the two
apart. `tests/tasks/test_reference_gsm8k.py` checks verdict equality against the installed lm-eval on
several hundred adversarial completions.

`numeric_match` is a2rl's older, more lenient comparison (numbers compared as numbers after
dropping commas, `$` and trailing periods). It is an opt-in metric only (`scored_metric=
numeric_strict|numeric_flexible`), never the default score.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Literal

LM_EVAL_VERSION = "0.4.13"
"""The lm-evaluation-harness release whose `gsm8k` task these verdicts reproduce."""
LM_EVAL_TASK_VERSION = "3.0"
"""`metadata.version` of lm-eval's gsm8k.yaml in that release."""

STRICT_RE = re.compile(r"#### (\-?[0-9\.\,]+)")
FLEXIBLE_RE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")
FALLBACK = "[invalid]"
"""What lm-eval's regex filter returns when its pattern does not match."""
IGNORE_REGEXES = (",", r"\$", r"(?s).*#### ", r"\.$")  # the third is cut linearly below
"""gsm8k.yaml's `regexes_to_ignore`, applied in this order."""

FilterName = Literal["strict-match", "flexible-extract"]
FILTERS: tuple[FilterName, ...] = ("strict-match", "flexible-extract")


def reference_name(filter_name: FilterName) -> str:
    """How the scored metric is named in descriptions and records."""
    return (f"lm-eval {LM_EVAL_VERSION} gsm8k (task version {LM_EVAL_TASK_VERSION}) exact_match, "
            f"{filter_name} filter")


def extract_strict(text: str) -> str | None:
    """The number after the FIRST `#### ` (None when there is none; lm-eval's `[invalid]`)."""
    match = STRICT_RE.search(text)
    return match.group(1).strip() if match else None


def extract_flexible(text: str) -> str | None:
    """The LAST match of the flexible regex (None when there is none).

    Faithful to lm-eval, quirks included: the first alternative also matches runs of `.`, `,`
    and `$` without digits, so a completion ending in "..." extracts "..." (and scores 0).
    """
    matches = FLEXIBLE_RE.findall(text)
    if not matches:
        return None
    groups = [group for group in matches[-1] if group]
    return groups[0].strip() if groups else None


def lm_eval_filter(filter_name: FilterName, text: str) -> str:
    """The string lm-eval's filter pipeline hands to the metric (`[invalid]` when none)."""
    extracted = extract_strict(text) if filter_name == "strict-match" else extract_flexible(text)
    return FALLBACK if extracted is None else extracted


_THROUGH_MARK = r"(?s).*#### "


def _lm_eval_normalize(text: str) -> str:
    for pattern in IGNORE_REGEXES:
        if pattern == _THROUGH_MARK:
            # The same result as re.sub(pattern, "", text) (the greedy match runs from the start
            # to the last "#### " and nothing is left to match after it) in linear time: the
            # regex backtracks from every start position, quadratic in a long answer without the
            # mark (1 MiB of digits took minutes per item).
            cut = text.rfind("#### ")
            text = text if cut < 0 else text[cut + len("#### "):]
        else:
            text = re.sub(pattern, "", text)
    # numpy's str_ arrays (where lm-eval keeps these strings) cannot hold trailing NULs.
    return text.rstrip("\x00").lower()


def exact_match(prediction: str, reference: str) -> bool:
    """lm-eval's `exact_match` with the gsm8k settings, for one (filtered) prediction and the
    whole gold `answer` text."""
    return _lm_eval_normalize(prediction) == _lm_eval_normalize(reference)


def lm_eval_correct(filter_name: FilterName, completion: str, answer: str) -> bool:
    """lm-eval's per-item verdict: filter the completion, exact-match it against `answer`."""
    return exact_match(lm_eval_filter(filter_name, completion), answer)


# --- the opt-in numeric comparison (a2rl's own, more lenient) ------------------------------

def normalize_number(text: str) -> str:
    """Drop commas and `$`, surrounding space and trailing periods ("$1,000." → "1000")."""
    return text.strip().replace(",", "").replace("$", "").rstrip(".")


def as_decimal(text: str) -> Decimal | None:
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def numeric_match(extracted: str | None, gold: str) -> bool:
    """Equal after normalisation: numerically when both parse ("5.0" == "5", "-3" != "3"),
    otherwise as strings. NOT lm-eval's verdict (see the module doc)."""
    if extracted is None:
        return False
    a, b = normalize_number(extracted), normalize_number(gold)
    da, db = as_decimal(a), as_decimal(b)
    if da is not None and db is not None:
        return da == db
    return a != "" and a == b
