"""AIME verdicts as lm-evaluation-harness 0.4.13 gives them (its `aime25` task), and pass@k.

lm-eval's `aime`/`aime24`/`aime25` tasks score one completion with their own
`process_results`: the answer is the text between the first and the last `$` of the completion
(the whole completion when it has fewer than two), replaced by the content of the last
`\\boxed{…}` when there is one; then the answer and the reference are normalised with the
MATH-dataset string normaliser (`strip_string`) and compared as strings, and when the
normaliser raises on either side the raw strings are compared instead. This module re-states
those rules (written from their behaviour, not copied), quirks included, because a2rl's
scores must mean what the reference's mean; `tests/tasks/test_aime2025.py` compares the verdicts
with the installed lm-eval on several hundred adversarial completions.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb

LM_EVAL_VERSION = "0.4.13"
LM_EVAL_TASK = "aime25"


class _Unnormalisable(Exception):
    """The normaliser's failure: the reference then compares the raw strings."""


def last_boxed(text: str) -> str | None:
    """The last `\\boxed…` expression of `text`, as the reference finds it: with a
    `\\boxed ` (a space) anywhere, everything after the last one up to the next `$`; else the
    last `\\boxed` (or, without one, the last `\\fbox`) up to the brace that brings the
    running count of `{` minus `}` back to zero (None when it never does)."""
    if "\\boxed " in text:
        return "\\boxed " + text.split("\\boxed ")[-1].split("$")[0]
    start = text.rfind("\\boxed")
    if start < 0:
        start = text.rfind("\\fbox")
        if start < 0:
            return None
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return None


def unbox(boxed: str) -> str | None:
    """The content of a `last_boxed` result; None where the reference's check fails (an
    `\\fbox{…}`, or a `\\boxed` not followed by `{`) and the answer stays as it was."""
    if "\\boxed " in boxed:
        return boxed[len("\\boxed "):] if boxed.startswith("\\boxed ") else None
    if boxed.startswith("\\boxed{") and boxed.endswith("}"):
        return boxed[len("\\boxed{"):-1]
    return None


def extract_answer(completion: str) -> str:
    """The string lm-eval's aime tasks compare with the reference."""
    dollars = [i for i, ch in enumerate(completion) if ch == "$"]
    answer = completion[dollars[0] + 1:dollars[-1]] if len(dollars) > 1 else completion
    boxed = last_boxed(completion)
    if boxed is not None:
        content = unbox(boxed)
        if content is not None:
            answer = content
    return answer


# ---- the MATH normaliser ----------------------------------------------------------------------
def _drop_units(s: str) -> str:
    if "\\text{ " not in s:
        return s
    parts = s.split("\\text{ ")
    if len(parts) != 2:
        raise _Unnormalisable("more than one `\\text{ `")
    return parts[0]


def _sqrt_braces(s: str) -> str:
    """`\\sqrt3` → `\\sqrt{3}` (one character only)."""
    if "\\sqrt" not in s:
        return s
    head, *rest = s.split("\\sqrt")
    out = head
    for part in rest:
        if not part:
            raise _Unnormalisable("`\\sqrt` at the end")
        out += "\\sqrt" + part if part[0] == "{" else "\\sqrt{" + part[0] + "}" + part[1:]
    return out


def _frac_braces(s: str) -> str:
    """`\\frac12` → `\\frac{1}{2}`, `\\frac1{2}` → `\\frac{1}{2}`; a `\\frac` followed by
    fewer than two characters (and not by `{`) leaves the whole string as it was."""
    head, *rest = s.split("\\frac")
    out = head
    for part in rest:
        out += "\\frac"
        if not part:
            raise _Unnormalisable("`\\frac` at the end")
        if part[0] == "{":
            out += part
            continue
        if len(part) < 2:
            return s
        a, b, tail = part[0], part[1], part[2:]
        out += "{" + a + "}" + (b + tail if b == "{" else "{" + b + "}" + tail)
    return out


def _slash_to_frac(s: str) -> str:
    pieces = s.split("/")
    if len(pieces) != 2:
        return s
    try:
        a, b = int(pieces[0]), int(pieces[1])
    except ValueError as exc:  # the reference lets this escape, so the raw strings decide
        raise _Unnormalisable("a `/` between non-integers") from exc
    if s != f"{a}/{b}":
        return s
    return "\\frac{" + str(a) + "}{" + str(b) + "}"


def normalise(s: str) -> str:
    """The MATH normaliser as the reference applies it (raises `_Unnormalisable` where the
    reference's raises)."""
    for old, new in (("\n", ""), ("\\!", ""), ("\\\\", "\\"), ("tfrac", "frac"),
                     ("dfrac", "frac"), ("\\left", ""), ("\\right", ""), ("^{\\circ}", ""),
                     ("^\\circ", ""), ("\\$", "")):
        s = s.replace(old, new)
    s = _drop_units(s)
    s = s.replace("\\%", "").replace(" .", " 0.").replace("{.", "{0.")
    if not s:
        return s
    if s[0] == ".":
        s = "0" + s
    sides = s.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:  # "x = 5" → "5"
        s = sides[1]
    s = _sqrt_braces(s).replace(" ", "")
    s = _frac_braces(s)
    if s == "0.5":
        s = "\\frac{1}{2}"
    return _slash_to_frac(s)


def equivalent(answer: str, reference: str) -> bool:
    try:
        return normalise(answer) == normalise(reference)
    except _Unnormalisable:
        return answer == reference


def lm_eval_correct(completion: str, reference: str) -> bool:
    """lm-eval 0.4.13 aime25's `exact_match` for one completion."""
    return equivalent(extract_answer(completion), reference)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct (Chen et al. 2021):
    1 - C(n-c, k) / C(n, k), computed exactly with integers."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    return float(1 - Fraction(comb(n - c, k), comb(n, k)))


def reference_name() -> str:
    return (f"lm-eval {LM_EVAL_VERSION} `{LM_EVAL_TASK}` exact_match per sample (its "
            "process_results: last \\boxed{} or $…$ span, MATH string normalisation), combined "
            "into unbiased pass@k")
