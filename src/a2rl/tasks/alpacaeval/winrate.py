"""AlpacaEval's metrics on a2rl's verdicts: `alpaca_eval`'s win rate and LC win rate, exactly.

Reference: `alpaca_eval` 0.6.6 (`alpaca_eval.metrics.get_winrate`,
`alpaca_eval.metrics.glm_winrate.get_length_controlled_winrate`, and the pairwise annotator's
handling of identical outputs). Its conventions, which a2rl follows:

- each annotation compares `output_1` (the reference) with `output_2` (the model); its
  `preference` is 1 when the reference wins, 2 when the model wins, 1.5 for a tie (a legacy 0
  also means a tie), anything in between for a weighted judge;
- outputs that are exactly equal are not sent to the judge: their preference is 1.5;
- a judge reply that cannot be parsed leaves the preference missing (NaN): the win rate drops
  the item (the mean is over the items with a preference), and the LC GLM is fitted without it
  but still predicts it (LC averages over every instruction);
- win rate = 100 × mean(preference − 1); standard error = 100 × its sample standard error;
  `discrete_win_rate` rounds each preference first (ties stay ties).

`win_rate()` re-implements the win rate in plain Python (a2rl's core needs no pandas; the
comparison test checks it equals alpaca_eval's on hundreds of annotations), and
`length_controlled_winrate()` calls alpaca_eval's own GLM (there is no LC without its data).
"""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

ALPACA_EVAL_VERSION = "0.6.6"
REFERENCE = f"alpaca_eval {ALPACA_EVAL_VERSION}"
"""The reference implementation these metrics reproduce (tests/tasks/test_reference_alpacaeval.py
checks them against the installed package)."""
REFERENCE_WINS, MODEL_WINS, TIE = 1.0, 2.0, 1.5
LC_FILE = "df_gamed.csv"
SUBMISSION_NAME = "submission"
"""`generator_2` in the annotations handed to alpaca_eval (the model being scored)."""

PairwiseVerdict = Literal["A", "B", "TIE"]


def preference(verdict: PairwiseVerdict | None, *, model_first: bool) -> float:
    """alpaca_eval's preference for one a2rl pairwise verdict (model shown as A when
    `model_first`); NaN when the judge never gave a parseable verdict."""
    if verdict is None:
        return math.nan
    if verdict == "TIE":
        return TIE
    return MODEL_WINS if (verdict == "A") == model_first else REFERENCE_WINS


def win_rate(preferences: Sequence[float | None]) -> dict[str, float]:
    """alpaca_eval's `get_winrate` on these preferences (None = NaN = unparseable).

    Returns win_rate, standard_error, n_wins, n_wins_base, n_draws, n_total and
    discrete_win_rate, as alpaca_eval names them, plus n_missing (items without a preference).
    win_rate and standard_error are NaN when no item has a preference (as in alpaca_eval)."""
    raw = [math.nan if p is None else float(p) for p in preferences]
    absolute = _described([TIE if p == 0 else p for p in raw])
    # ZeroOneScoringRule: a tie (1.5 or the legacy 0) is a draw, any other value is rounded
    # half to even first.
    discrete = _described([TIE if p in (0.0, TIE) else math.nan if math.isnan(p) else float(round(p))
                           for p in raw])
    return {**absolute, "discrete_win_rate": discrete["win_rate"],
            "n_missing": float(len(raw)) - absolute["n_total"]}


def _described(prefs: list[float]) -> dict[str, float]:
    """BaseScoringRule.describe_head2head after the rule's own preprocessing."""
    n_draws = sum(1 for p in prefs if p == TIE)
    valid = [p - 1.0 for p in prefs if not math.isnan(p) and 1.0 <= p <= 2.0]
    n = len(valid)
    mean = math.fsum(valid) / n if n else math.nan
    sem = (math.sqrt(math.fsum((v - mean) ** 2 for v in valid) / (n - 1)) / math.sqrt(n)
           if n >= 2 else math.nan)
    return {"win_rate": 100.0 * mean, "standard_error": 100.0 * sem,
            "n_wins": float(sum(1 for v in valid if v > 0.5)),
            "n_wins_base": float(sum(1 for v in valid if v < 0.5)),
            "n_draws": float(n_draws), "n_total": float(n)}


@contextlib.contextmanager
def _patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def annotations_frame(rows: Sequence[dict[str, Any]]) -> Any:
    """The annotations alpaca_eval's metrics take, from a2rl's per-item rows: output_1 = the
    reference (generator_1), output_2 = the model (generator_2 = SUBMISSION_NAME), preference
    (NaN when missing), indexed by the AlpacaEval instruction position (the GLM looks each
    instruction's difficulty up by it)."""
    import pandas as pd

    return pd.DataFrame.from_records(
        [{"instruction": r["instruction"], "output_1": r["reference"], "output_2": r["completion"],
          "generator_1": r.get("reference_generator") or "reference", "generator_2": SUBMISSION_NAME,
          "preference": math.nan if r["preference"] is None else float(r["preference"]),
          "annotator": "a2rl"} for r in rows],
        index=pd.Index([int(r["index"]) for r in rows]))


def length_controlled_winrate(rows: Sequence[dict[str, Any]], lc_file: Path) -> dict[str, Any]:
    """alpaca_eval's `get_length_controlled_winrate` (glm `length_controlled_v1`) on a2rl's rows.

    alpaca_eval downloads `df_gamed.csv` itself (with network retries); it is pointed at the
    exact local file a2rl checked and hashed instead. Raises ImportError without alpaca_eval."""
    import warnings
    from importlib.metadata import version

    with warnings.catch_warnings():
        # alpaca_eval imports pkg_resources and calls sklearn APIs that warn about deprecations.
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        from alpaca_eval.metrics import glm_winrate

        def local_only(*args: Any, filename: str = "", **kwargs: Any) -> str:
            if filename != LC_FILE:
                raise FileNotFoundError(f"alpaca_eval asked for {filename!r}; only {LC_FILE} is provided")
            return str(lc_file)

        # In AlpacaEval's order: the GLM's cross-validation folds follow the row order, and
        # alpaca_eval holds annotations in the evaluation set's order.
        frame = annotations_frame(sorted(rows, key=lambda r: int(r["index"])))
        with _patched(glm_winrate, "hf_hub_download", local_only):
            out = glm_winrate.get_length_controlled_winrate(
                frame, save_weights_dir=None, is_add_glm_preference_inplace=False)
    result: dict[str, Any] = {k: float(v) for k, v in out.items() if isinstance(v, numbers.Real)}
    result["alpaca_eval_version"] = version("alpaca_eval")
    return result
