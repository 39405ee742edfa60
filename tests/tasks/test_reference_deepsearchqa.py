"""DeepSearchQA grading against the dataset's official rule.

The rule (DeepSearchQA paper and its Kaggle starter code): per question, which expected items
the response contains and which extra items it gives; fully correct = all found and none extra;
precision/recall/F1 over the items. `tests/fixtures/deepsearchqa_grading.jsonl` holds
hand-labelled cases (written for a2rl: numbers, spelled numbers, aliases, dates, sets with
extra or missing items, hedged answers), each labelled with what the rule gives: fully correct
or not, how many expected items are found, and (where it is unambiguous) how many extra items
there are. The string grader must agree on every case.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from a2rl.tasks.deepsearchqa.grading import (
    SET,
    SINGLE,
    canonical_tokens,
    expected_items,
    outcome,
    outcome_from_verdict,
    parse_judge_reply,
    split_gold_items,
    string_grade,
)

FIXTURE = Path(__file__).parent.parent / "fixtures" / "deepsearchqa_grading.jsonl"


def _cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]


def _agrees(case: dict[str, Any]) -> tuple[bool, str]:
    items = expected_items(case["answer"], case["answer_type"], case.get("items"))
    got = string_grade(case["prediction"], items)
    ok = got.fully_correct == case["fully_correct"] and got.n_found == case["n_found"]
    if case["n_excessive"] is not None:
        ok = ok and len(got.excessive) == case["n_excessive"]
    return ok, (f"{case['id']}: expected fully_correct={case['fully_correct']} found={case['n_found']} "
                f"extra={case['n_excessive']}; got {got.fully_correct} {got.n_found} {list(got.excessive)} "
                f"(gold items {items})")


def test_fixture_is_large_and_varied() -> None:
    cases = _cases()
    assert len(cases) >= 60
    assert len({c["id"] for c in cases}) == len(cases)
    kinds = {c["id"].split("-")[0] for c in cases}
    assert {"num", "alias", "date", "hedge", "set"} <= kinds
    assert sum(c["answer_type"] == SET for c in cases) >= 15
    assert sum(c["fully_correct"] for c in cases) >= 20 and sum(not c["fully_correct"] for c in cases) >= 20


def test_string_grader_agrees_with_the_official_rule_on_every_fixture_case() -> None:
    results = [_agrees(c) for c in _cases()]
    disagreements = [why for ok, why in results if not ok]
    agreement = 100.0 * (len(results) - len(disagreements)) / len(results)
    report = f"agreement {agreement:.1f}% on {len(results)} cases:\n" + "\n".join(disagreements)
    assert not disagreements, report


@pytest.mark.parametrize(("prediction", "gold", "fully", "precision", "recall"), [
    ("Rhine, Danube, Elbe, Oder, Vistula, Seine, Loire, Po, Tagus, Ebro", ["Rhine", "Danube"], False, 0.2,
     1.0),
    ("France, Germany and Belgium", ["France", "Germany"], False, 2 / 3, 1.0),
    ("Belgium", ["France", "Germany", "Belgium"], False, 1.0, 1 / 3),
    ("Mars", ["Mercury"], False, 0.0, 0.0),
    ("", ["Mercury"], False, 0.0, 0.0),
    ("Mercury and Venus", ["Venus", "Mercury"], True, 1.0, 1.0),
])
def test_precision_recall_f1(prediction: str, gold: list[str], fully: bool, precision: float,
                             recall: float) -> None:
    o = string_grade(prediction, gold)
    assert o.fully_correct is fully
    assert math.isclose(o.precision, precision) and math.isclose(o.recall, recall)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    assert math.isclose(o.f1, f1)


def test_outcome_categories_follow_the_rule() -> None:
    assert outcome([True, True], []).fully_correct
    assert outcome([True, True], ["x"]).correct_with_extraneous and not outcome([True], ["x"]).fully_correct
    assert outcome([False, False], ["x"]).fully_incorrect
    assert outcome([True, False], []).partially_correct
    # no expected item and nothing extra is vacuously correct (the starter code's rule)
    assert outcome([], []).fully_correct and not outcome([], ["x"]).fully_correct
    assert outcome([], []).precision == 0.0 and outcome([], []).recall == 0.0


# ---- the judge's JSON reply --------------------------------------------------------------


def test_judge_reply_parsing() -> None:
    reply = ('Here is my grade:\n```json\n{"explanation": "Italy is extra.", "correctness_details": '
             '{"Belgium": true, "France": false}, "excessive_answers": ["Italy"]}\n```')
    verdict = parse_judge_reply(reply)
    assert verdict is not None
    o = outcome_from_verdict(verdict)
    assert o.found == (True, False) and o.excessive == ("Italy",) and not o.fully_correct
    assert o.precision == 0.5 and o.recall == 0.5
    # the starter code's list-of-records form; the judge's own items set the counts
    v3 = parse_judge_reply('{"correctness_details": [{"key": "Belgium", "value": true}, '
                           '{"key": "France", "value": true}, {"key": "Spain", "value": true}], '
                           '"excessive_answers": [" "]}')
    assert v3 is not None and outcome_from_verdict(v3).fully_correct and outcome_from_verdict(v3).n_found == 3


@pytest.mark.parametrize("reply", [
    "correct", "", "{not json", '{"correctness_details": {}, "excessive_answers": []}',
    '{"correctness_details": {"Belgium": "yes", "France": true}, "excessive_answers": []}',
    '{"correctness_details": {"Belgium": true, "France": true}, "excessive_answers": "none"}',
    '{"correctness_details": [{"k": "Belgium"}], "excessive_answers": []}',
    '["Belgium", "France"]',
])
def test_unusable_judge_replies_are_rejected(reply: str) -> None:
    assert parse_judge_reply(reply) is None


# ---- pieces of the string grader ---------------------------------------------------------


@pytest.mark.parametrize(("a", "b"), [
    ("99,354", "99354"), ("two", "2"), ("USA", "United States"), ("Kiev", "Kyiv"),
    ("5 March 2021", "2021-03-05"), ("March 5th, 2021", "03/05/2021"), ("1.5 million", "1,500,000"),
    ("Côte d'Ivoire", "Ivory Coast"), ("forty-two", "42"), ("50%", "50 per cent"),
])
def test_canonical_forms_agree(a: str, b: str) -> None:
    assert canonical_tokens(a) == canonical_tokens(b)


@pytest.mark.parametrize(("a", "b"), [("2", "12"), ("us", "United States"), ("March 5, 2021", "March 2021"),
                                      ("1.5", "15")])
def test_canonical_forms_differ(a: str, b: str) -> None:
    assert canonical_tokens(a) != canonical_tokens(b)


@pytest.mark.parametrize(("answer", "items"), [
    ("France, Germany and Belgium", ["France", "Germany", "Belgium"]),
    ("Washington, D.C., Paris", ["Washington, D.C.", "Paris"]),
    ("Acme, Inc., Globex", ["Acme, Inc.", "Globex"]),
    ("1,200, 3,400", ["1,200", "3,400"]),
    ("March 5, 2021, April 9, 2022", ["March 5, 2021", "April 9, 2022"]),
    ("Serbia, Bosnia and Herzegovina", ["Serbia", "Bosnia and Herzegovina"]),
    ("Paris; Lyon, France", ["Paris", "Lyon, France"]),
    ("Paris", ["Paris"]),
])
def test_split_gold_items(answer: str, items: list[str]) -> None:
    assert split_gold_items(answer) == items


def test_single_answers_are_never_split() -> None:
    assert expected_items("Washington, D.C.", SINGLE) == ["Washington, D.C."]
    assert expected_items("ignored", SET, ["a, b", "c"]) == ["a, b", "c"]


# ---- units, acronyms and clauses (what the official rule gives for each) ------------------


def _graded(prediction: str, gold: list[str]) -> tuple[bool, int, int]:
    o = string_grade(prediction, gold)
    return o.fully_correct, o.n_found, len(o.excessive)


@pytest.mark.parametrize(("prediction", "gold", "expected"), [
    # a unit written out, abbreviated or spelled the other way is the same unit
    ("The tower is 324 meters tall", ["324 m"], (True, 1, 0)),
    ("324 metres", ["324 m"], (True, 1, 0)),
    ("324 m", ["324 meters"], (True, 1, 0)),
    ("5 kilograms", ["5 kg"], (True, 1, 0)),
    ("roughly 5 kg", ["5 kilograms"], (True, 1, 0)),
    ("12 km", ["12 kilometres"], (True, 1, 0)),
    ("12 kilometres", ["12 km"], (True, 1, 0)),
    ("a 45 per cent share", ["45%"], (True, 1, 0)),
    ("45%", ["45 percent"], (True, 1, 0)),
    ("120 km/h", ["120 kilometres per hour"], (True, 1, 0)),
    ("1,200 km²", ["1200 square kilometers"], (True, 1, 0)),
    ("20°C", ["20 degrees Celsius"], (True, 1, 0)),
    ("$5m", ["$5 million"], (True, 1, 0)),
    ("8,849 m (29,032 ft)", ["8849 metres"], (True, 1, 0)),
    # a wrong number or a wrong unit stays wrong; a second amount is an extra item
    ("325 meters", ["324 m"], (False, 0, 1)),
    ("324 feet", ["324 m"], (False, 0, 1)),
    ("324 km", ["324 m"], (False, 0, 1)),
    ("46 per cent", ["45%"], (False, 0, 1)),
    ("5 kg or 6 kg", ["5 kg"], (False, 1, 1)),
    ("5 m", ["5 million"], (False, 0, 1)),  # a lower-case m after a number is metres
    ("12 km, 15 km", ["12 km"], (False, 1, 1)),
])
def test_units_after_numbers(prediction: str, gold: list[str], expected: tuple[bool, int, int]) -> None:
    assert _graded(prediction, gold) == expected


def test_a_unit_letter_is_a_unit_only_after_a_number() -> None:
    assert canonical_tokens("Plan m") != canonical_tokens("Plan meters")
    assert canonical_tokens("Vitamin C") != canonical_tokens("Vitamin celsius")
    assert canonical_tokens("the 1990s") == canonical_tokens("1990s")


@pytest.mark.parametrize(("prediction", "gold", "expected"), [
    # an acronym in capitals for the words it abbreviates, either way round
    ("WHO", ["World Health Organization"], (True, 1, 0)),
    ("the World Health Organization", ["WHO"], (True, 1, 0)),
    ("It was NASA.", ["National Aeronautics and Space Administration"], (True, 1, 0)),
    ("UEFA", ["Union of European Football Associations"], (True, 1, 0)),
    ("U.N.", ["United Nations"], (True, 1, 0)),
    # both forms side by side are one item
    ("the World Health Organization (WHO)", ["WHO"], (True, 1, 0)),
    ("WHO (World Health Organization)", ["World Health Organization"], (True, 1, 0)),
    ("World Health Organization and UNICEF", ["WHO", "UNICEF"], (True, 2, 0)),
    # other letters, other words, or the pronoun are not the organisation
    ("WTO", ["World Health Organization"], (False, 0, 1)),
    ("World Trade Organization", ["WHO"], (False, 0, 1)),
    ("who", ["World Health Organization"], (False, 0, 1)),
    ("WHO", ["WTO"], (False, 0, 1)),
    ("WHO and UNICEF", ["World Health Organization"], (False, 1, 1)),
    ("Eastern Ukraine", ["EU"], (False, 0, 1)),  # two initials are not expanded
])
def test_acronyms_and_their_expansions(prediction: str, gold: list[str],
                                       expected: tuple[bool, int, int]) -> None:
    assert _graded(prediction, gold) == expected


@pytest.mark.parametrize(("prediction", "gold", "expected"), [
    # a clause about the answer is not a second item
    ("The answer is Paris, which is the capital", ["Paris"], (True, 1, 0)),
    ("Paris, which is large and old", ["Paris"], (True, 1, 0)),
    ("The answer is Paris, the capital of France", ["Paris"], (True, 1, 0)),
    ("Marie Curie, who won two Nobel Prizes", ["Marie Curie"], (True, 1, 0)),
    ("Based on my search, the answer is Paris", ["Paris"], (True, 1, 0)),
    ("Paris is the capital of France", ["Paris"], (True, 1, 0)),
    ("Paris and Lyon, both in France", ["Paris", "Lyon"], (True, 2, 0)),
    ("Paris, which is the capital, and Lyon", ["Paris", "Lyon"], (True, 2, 0)),
    # items after a clause, hedging clauses and real second items still count
    ("Paris, which is the capital, and Madrid", ["Paris"], (False, 1, 1)),
    ("Paris, which could also be Lyon", ["Paris"], (False, 1, 1)),
    ("Paris, as well as Lyon", ["Paris"], (False, 1, 1)),
    ("France, the Netherlands", ["France"], (False, 1, 1)),
    ("Madrid, which is the capital", ["Paris"], (False, 0, 1)),
    ("The answer is Paris, which is the capital", ["Paris", "Lyon"], (False, 1, 0)),
])
def test_clauses_are_not_list_items(prediction: str, gold: list[str],
                                    expected: tuple[bool, int, int]) -> None:
    assert _graded(prediction, gold) == expected


def test_an_item_after_a_clause_lowers_precision() -> None:
    o = string_grade("Paris, which is the capital, and Madrid", ["Paris"])
    assert o.correct_with_extraneous and math.isclose(o.precision, 0.5) and o.recall == 1.0


# ---- documented differences from a judge ------------------------------------------------


@pytest.mark.parametrize(("prediction", "gold"), [
    ("Paris, France", ["Paris"]),          # a judge reads the country as a qualifier
    ("Google", ["Alphabet"]),              # aliases outside the table
    ("Bach", ["Johann Sebastian Bach"]),   # a short form of a name
    ("0.324 km", ["324 m"]),               # the same amount in another unit
    ("the United Nations", ["UN"]),        # a two-letter acronym spelled out
])
def test_documented_differences_from_a_judge(prediction: str, gold: list[str]) -> None:
    """Where the string grader is stricter than a judge (named in the task description). If one
    of these starts passing, update the description and move the case into the fixture."""
    assert not string_grade(prediction, gold).fully_correct
