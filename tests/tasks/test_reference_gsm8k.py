"""GSM8K verdicts equal lm-evaluation-harness's own, on several hundred adversarial completions.

The reference side is the installed lm-eval itself (the `test` extra): its gsm8k.yaml is read
from the package, its filter pipeline is built with `build_filter_ensemble` from that YAML
(regex + take_first, for `strict-match` and `flexible-extract`), and its registered
`exact_match` metric is called with the YAML's keyword arguments, exactly as
`ConfigurableTask.process_results` calls it. No model and no data download are involved.
"""

from __future__ import annotations

import importlib.metadata
import random
from pathlib import Path
from typing import Any

try:
    import lm_eval
    import yaml
    from lm_eval.api.instance import Instance
    from lm_eval.api.registry import get_metric
    from lm_eval.filters import build_filter_ensemble
except ImportError as exc:  # a collection error that names the fix, not a silent skip
    raise ImportError(f"{exc}: the reference comparison needs lm-eval; install the test extra "
                      "(pip install -e '.[test]')") from exc

from a2rl.tasks.gsm8k.scoring import (
    FILTERS,
    FLEXIBLE_RE,
    IGNORE_REGEXES,
    LM_EVAL_TASK_VERSION,
    LM_EVAL_VERSION,
    STRICT_RE,
    extract_strict,
    lm_eval_correct,
    numeric_match,
)
from a2rl.tasks.gsm8k.task import GSM8KTask

YAML_PATH = Path(lm_eval.__file__).parent / "tasks" / "gsm8k" / "gsm8k.yaml"
CONFIG: dict[str, Any] = yaml.safe_load(YAML_PATH.read_text())


def lm_eval_verdicts(completions: list[str], answers: list[str]) -> dict[str, list[bool]]:
    """Per filter, lm-eval's exact_match verdict for each (completion, gold answer) pair."""
    metric_cfg = next(m for m in CONFIG["metric_list"] if m["metric"] == "exact_match")
    kwargs = {k: v for k, v in metric_cfg.items()
              if k not in ("metric", "aggregation", "higher_is_better")}
    metric = get_metric("exact_match")
    out: dict[str, list[bool]] = {}
    for flt in CONFIG["filter_list"]:
        components = [[f["function"], {k: v for k, v in f.items() if k != "function"}]
                      for f in flt["filter"]]
        ensemble = build_filter_ensemble(flt["name"], components)
        instances = [Instance("generate_until", {"answer": a}, ("", {}), i, ("gsm8k", i, 1))
                     for i, a in enumerate(answers)]
        for inst, completion in zip(instances, completions, strict=True):
            inst.resps = [completion]
        ensemble.apply(instances)
        verdicts = []
        for inst, gold in zip(instances, answers, strict=True):
            result = inst.filtered_resps[flt["name"]]
            score = metric(references=[gold], predictions=[result], **kwargs)["exact_match"]
            verdicts.append(bool(score == 1.0))
        out[flt["name"]] = verdicts
    return out


# --- adversarial completions -------------------------------------------------------------

GOLD_ANSWERS = [
    "She sold 48/2 = <<48/2=24>>24 clips in May.\nAltogether 48+24 = <<48+24=72>>72.\n#### 72",
    "It sells 1,250*4 = <<1250*4=5000>>5,000 pens.\n#### 5,000",
    "She has 3-5 = <<3-5=-2>>-2 apples.\n#### -2",
    "The price is 200-1 = <<200-1=199>>199.\n#### 199",
    "Nothing is left: 5-5 = <<5-5=0>>0\n#### 0",
    "Half of one is 0.5.\n#### 0.5",
    "Total 1000000 cents.\n#### 1000000",
    "The ratio is 3.75\n#### 3.75",
    "A first guess #### 10 was wrong; the total is 12.\n#### 12",
]


def _gold(answer: str) -> str:
    return answer.rsplit("#### ", 1)[1]


def _variants(n: str, rng: random.Random) -> list[str]:
    """Renderings of the number n, right and wrong (for lm-eval or for a numeric match)."""
    plain = n.replace(",", "")
    neg = plain.startswith("-")
    digits = plain.lstrip("-")
    with_commas = f"{int(float(plain)):,}" if "." not in plain else plain
    other = str(int(float(plain)) + rng.choice([1, -1, 10, 100]))
    out = [n, plain, with_commas, f"{plain}.0", f"{plain}.00", f"0{plain}" if not neg else plain,
           f"00{digits}", f"${plain}", f"${plain}.", f"${plain}.00.", f"{plain}.", f"{plain}..",
           f"{plain}...", f"{plain},", f",{plain}", f"{plain}.,", f"$${plain}", f"{plain}$",
           f"\u2212{digits}", f"- {digits}", f"-{plain}" if not neg else digits, f"+{plain}",
           f"{plain}%", f"{plain}e0", f"{plain}/1", f"{plain} ", f" {plain}", f"{plain}\n",
           f"{plain}.\n", f"{plain}\t", f"{plain}\x00", f"{plain}\u00a0", f"{plain[:1]} {plain[1:]}",
           "".join(chr(0xFF10 + int(c)) if c.isdigit() else c for c in plain),  # fullwidth
           f"{plain}0", other, f"{other},{plain}", f"{plain}.{plain}", f"1,{plain}",
           f"{plain},000", f"{plain}.5", "..", "$", "", "[invalid]", "#### " + plain,
           f"{digits}-", f"({plain})", f"{plain}km", f"{plain}.0.0", f"{plain}\r"]
    return out


def _wrappers(x: str, n: str, rng: random.Random) -> list[str]:
    """Completions that present x as the final answer, in many ways (n is the gold number)."""
    distractor = str(rng.randint(2, 999))
    return [
        f"Step 1: {distractor} + 1.\n#### {x}",
        f"#### {x}",
        f"The answer is {x}",
        f"####{x}",
        f"####  {x}",
        f"#### {x}\n\nQuestion: next one #### {distractor}",
        f"#### {distractor}\n#### {x}",
        f"#### {x}\n#### {distractor}",
        f"We get {x} apples.",
        f"**#### {x}**",
        f"#### {x} dollars in total",
        f"#### {x}.\nDone...",
        f"Answer: \\boxed{{{x}}}",
        f"#### ${x}",
        f"So {distractor} then {x}",
        f"#### {x}\n#### {x}",
        f"(#### {x})",
        f"#### {x}!",
        f"Result #### {x} ... i think {n}",
        f"{x}",
    ]


def adversarial_cases(seed: int = 20261201) -> list[tuple[str, str]]:
    """(completion, gold answer) pairs: every variant × wrapper for a sample of golds."""
    rng = random.Random(seed)
    cases: list[tuple[str, str]] = []
    for answer in GOLD_ANSWERS:
        n = _gold(answer)
        for x in _variants(n, rng):
            wrappers = _wrappers(x, n, rng)
            for w in rng.sample(wrappers, 3):
                cases.append((w, answer))
    # completions cut at odd places, and completions without any number
    for answer in GOLD_ANSWERS:
        n = _gold(answer)
        cases += [(f"#### {n}"[:k], answer) for k in range(1, len(n) + 6)]
        cases += [("I don't know.", answer), ("#### ", answer), ("####", answer),
                  (f"#### {n}" * 3, answer), (f"#### {n}\n" * 3, answer)]
    return cases


CASES = adversarial_cases()


def test_lm_eval_is_the_pinned_release() -> None:
    """The verdicts are pinned to one lm-eval release and one gsm8k task version."""
    assert importlib.metadata.version("lm_eval") == LM_EVAL_VERSION
    assert str(CONFIG["metadata"]["version"]) == LM_EVAL_TASK_VERSION
    filters = {f["name"]: f["filter"] for f in CONFIG["filter_list"]}
    assert tuple(filters) == FILTERS
    assert filters["strict-match"][0]["regex_pattern"] == STRICT_RE.pattern
    assert filters["flexible-extract"][0]["regex_pattern"] == FLEXIBLE_RE.pattern
    assert filters["flexible-extract"][0]["group_select"] == -1
    metric = next(m for m in CONFIG["metric_list"] if m["metric"] == "exact_match")
    assert tuple(metric["regexes_to_ignore"]) == IGNORE_REGEXES
    assert (metric["ignore_case"], metric["ignore_punctuation"]) == (True, False)
    assert CONFIG["doc_to_target"] == "{{answer}}"  # the reference is the whole answer text


def test_verdicts_equal_lm_eval_on_adversarial_completions() -> None:
    assert len(CASES) >= 600
    completions = [c for c, _ in CASES]
    answers = [a for _, a in CASES]
    reference = lm_eval_verdicts(completions, answers)
    for name in FILTERS:
        ours = [lm_eval_correct(name, c, a) for c, a in CASES]
        mismatches = [(c, _gold(a), r) for c, a, o, r in zip(completions, answers, ours,
                                                              reference[name], strict=True)
                      if o != r]
        assert not mismatches, f"{name}: {len(mismatches)}/{len(CASES)} differ: {mismatches[:5]}"
        # the set is adversarial: both verdicts occur often
        assert 0.1 < sum(reference[name]) / len(CASES) < 0.9


def test_numeric_metric_differs_from_lm_eval_where_documented() -> None:
    """The opt-in numeric comparison is not lm-eval's: `199.00`, `0199`, `199..` are right for it."""
    answer = GOLD_ANSWERS[3]
    for x in ("199.0", "199.00", "0199", "199.."):
        assert not lm_eval_correct("strict-match", f"#### {x}", answer)
        assert numeric_match(extract_strict(f"#### {x}"), "199")
    # on the adversarial set the two disagree often (so the comparison above can tell them apart)
    differ = sum(numeric_match(extract_strict(c), _gold(a)) != lm_eval_correct("strict-match", c, a)
                 for c, a in CASES)
    assert differ > 50


def test_task_scores_with_lm_eval_verdicts_by_default() -> None:
    completions = [c for c, _ in CASES]
    answers = [a for _, a in CASES]
    reference = lm_eval_verdicts(completions, answers)
    tasks = {scored: GSM8KTask({"source": "offline", "heldout_seed": 1, "scored_metric": scored})
             for scored in ("strict", "flexible", "numeric_strict")}
    assert GSM8KTask({"source": "offline", "heldout_seed": 1}).params.scored_metric == "strict"
    for i, (completion, answer) in enumerate(CASES):
        item = {"answer": answer, "final": _gold(answer).replace(",", "")}
        strict, flexible = reference["strict-match"][i], reference["flexible-extract"][i]
        numeric = numeric_match(extract_strict(completion), item["final"])
        for scored, expected in (("strict", strict), ("flexible", flexible),
                                 ("numeric_strict", numeric)):
            verdict = tasks[scored].score_completion(item, completion)
            assert verdict.score == float(expected), (scored, completion, answer)
            assert verdict.metrics["lm_eval_strict_match"] == float(strict)
            assert verdict.metrics["lm_eval_flexible_extract"] == float(flexible)
            assert verdict.metrics["numeric_strict"] == float(numeric)


if __name__ == "__main__":  # print the agreement figures quoted in the notes
    completions = [c for c, _ in CASES]
    answers = [a for _, a in CASES]
    reference = lm_eval_verdicts(completions, answers)
    for name in FILTERS:
        ours = [lm_eval_correct(name, c, a) for c, a in CASES]
        agree = sum(o == r for o, r in zip(ours, reference[name], strict=True))
        print(f"{name}: {agree}/{len(CASES)} agree ({100.0 * agree / len(CASES):.1f}%), "
              f"lm-eval counts {sum(reference[name])} correct")
