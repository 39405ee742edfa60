"""DeepSearchQA grading: the official outcome rule, and a string-matching stand-in for its judge.

The official protocol (the DeepSearchQA paper, arXiv:2601.20975, and its Kaggle starter code,
`andrewmingwang/deepsearchqa-starter-code`) asks an LLM autorater, for each question, which
ground-truth answer items the response contains (`correctness_details`: item -> found) and
which items the response gives that are not in the ground truth (`excessive_answers`). From
those two lists, per question:

- fully correct: every expected item found and no excessive item (S = G);
- fully incorrect: no expected item found;
- correct with extraneous answers: every expected item found, but some excessive item;
- precision = found / (found + excessive), recall = found / expected, F1 their harmonic mean
  (each 0 when its denominator is 0).

`outcome()` is that rule. `string_grade()` fills the two lists without an LLM, so the same rule
applies when no judge is configured. It is an approximation of what a judge decides (see its
docstring for what it does and does not recognise); the hand-labelled fixture in
`tests/fixtures/deepsearchqa_grading.jsonl` pins its verdicts.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

SINGLE, SET = "Single Answer", "Set Answer"
STRING_GRADER_VERSION = 3
"""Version of `string_grade`'s matching rules: part of the task fingerprint in string mode, since
a change in them changes scores."""


# ---- the official rule --------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One question's grade under DeepSearchQA's rule."""

    found: tuple[bool, ...]
    """Per expected (ground-truth) item: whether the response contains it."""
    excessive: tuple[str, ...]
    """Items the response gives that are not in the ground truth."""

    @property
    def n_found(self) -> int:
        return sum(self.found)

    @property
    def fully_correct(self) -> bool:
        """S = G: every expected item found (vacuously, when none is expected) and nothing extra."""
        return all(self.found) and not self.excessive

    @property
    def fully_incorrect(self) -> bool:
        return bool(self.found) and self.n_found == 0

    @property
    def correct_with_extraneous(self) -> bool:
        return all(self.found) and bool(self.excessive)

    @property
    def partially_correct(self) -> bool:
        return 0 < self.n_found < len(self.found)

    @property
    def precision(self) -> float:
        denom = self.n_found + len(self.excessive)
        return self.n_found / denom if denom else 0.0

    @property
    def recall(self) -> float:
        return self.n_found / len(self.found) if self.found else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    def record(self) -> dict[str, Any]:
        return {"fully_correct": self.fully_correct, "fully_incorrect": self.fully_incorrect,
                "correct_with_extraneous": self.correct_with_extraneous,
                "precision": self.precision, "recall": self.recall, "f1": self.f1,
                "n_expected": len(self.found), "n_found": self.n_found,
                "excessive": list(self.excessive)}


def outcome(found: Sequence[bool], excessive: Sequence[str]) -> Outcome:
    return Outcome(tuple(bool(f) for f in found), tuple(str(e) for e in excessive))


# ---- the judge's reply --------------------------------------------------------------------


def parse_judge_reply(reply: str) -> str | None:
    """The autorater's JSON reply, checked and canonicalised (a JSON string, so it can be cached
    as a verdict), or None when it is not a usable grade.

    Accepted: one JSON object (a ```json fence and text around it are tolerated) with
    `correctness_details` (an object of ground-truth item -> true/false; the starter code's list
    of {"key", "value"} records too) and `excessive_answers` (a list of strings). The counts come
    from the judge's own items, as in the starter code. One check the starter code does not
    make: the details must not be empty (every ground truth has an item; an empty object would
    grade any response fully correct, which a response could try to talk a judge into)."""
    obj = _first_json_object(reply)
    if not isinstance(obj, dict):
        return None
    details = obj.get("correctness_details")
    extra = obj.get("excessive_answers", [])
    if isinstance(details, list):
        try:
            details = {str(d["key"]): d["value"] for d in details}
        except (KeyError, TypeError):
            return None
    if not isinstance(details, dict) or not details or not isinstance(extra, list):
        return None
    if not all(isinstance(v, bool) for v in details.values()) or not all(isinstance(e, str) for e in extra):
        return None
    return json.dumps({"items": list(details), "found": list(details.values()),
                       "excessive": [e for e in extra if e.strip()]})


def outcome_from_verdict(verdict: str) -> Outcome:
    data = json.loads(verdict)
    return outcome(data["found"], data["excessive"])


def _first_json_object(text: str) -> Any:
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        return obj
    return None


# ---- canonical form for the string grader ------------------------------------------------

_MONTHS = {name: i + 1 for i, name in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"])}
_MONTHS.update({name[:3]: i for name, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))

_UNITS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
          "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
          "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
          "nineteen": 19}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
             "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12}

ALIASES: dict[str, str] = {
    # countries and places (variant -> canonical), all in canonical-token form
    "united states of america": "united states", "usa": "united states", "u s a": "united states",
    "u s": "united states", "america": "united states",
    "uk": "united kingdom", "u k": "united kingdom", "great britain": "united kingdom",
    "britain": "united kingdom",
    "uae": "united arab emirates", "ussr": "soviet union", "u s s r": "soviet union",
    "czech republic": "czechia", "holland": "netherlands", "burma": "myanmar",
    "ivory coast": "cote divoire", "east timor": "timor leste", "swaziland": "eswatini",
    "kiev": "kyiv", "bombay": "mumbai", "calcutta": "kolkata", "madras": "chennai",
    "peking": "beijing", "canton": "guangzhou", "saigon": "ho chi minh city",
    "nyc": "new york city", "d c": "dc",
    # units and abbreviations
    "per cent": "percent", "pct": "percent", "km": "kilometers", "kilometres": "kilometers",
    "kilometre": "kilometers", "kilometer": "kilometers", "metres": "meters", "metre": "meters",
    "meter": "meters", "kg": "kilograms", "kilogram": "kilograms", "mt": "mount", "ft": "feet",
    "foot": "feet", "st": "saint", "dr": "doctor", "&": "and", "sq": "square",
}
"""Spellings treated as the same thing. An approximation of the judge's world knowledge: it
covers common country/city renamings and abbreviations, not every alias a judge would accept."""
_CASED_ALIASES = [(re.compile(r"(?<![\w.])U\.?S\.?A?\.?(?![\w])"), " United States "),
                  (re.compile(r"(?<![\w.])U\.?K\.?(?![\w])"), " United Kingdom "),
                  (re.compile(r"(?<=\d)M\b"), " million ")]
"""Applied before case folding: `US` is the country, `us` the pronoun; `5M` is five million,
`5m` five metres."""

_NUMBER_UNITS: dict[str, str] = {
    unit: name for name, spellings in {
        "meters": "m meter meters metre metres",
        "centimeters": "cm cms centimeter centimeters centimetre centimetres",
        "millimeters": "mm millimeter millimeters millimetre millimetres",
        "kilometers": "km kms kilometer kilometers kilometre kilometres",
        "miles": "mi mile miles", "feet": "ft foot feet", "inches": "inch inches",
        "yards": "yd yds yard yards",
        "kilograms": "kg kgs kilo kilos kilogram kilograms kilogramme kilogrammes",
        "grams": "g gram grams gramme grammes", "milligrams": "mg milligram milligrams",
        "tonnes": "tonne tonnes", "pounds": "lb lbs pound pounds", "ounces": "oz ounce ounces",
        "liters": "l liter liters litre litres",
        "milliliters": "ml milliliter milliliters millilitre millilitres",
        "minutes": "min mins minute minutes", "hours": "h hr hrs hour hours",
        "years": "yr yrs year years", "hectares": "ha hectare hectares", "acres": "acre acres",
        "kilowatts": "kw kilowatt kilowatts", "megawatts": "mw megawatt megawatts",
        "gigawatts": "gw gigawatt gigawatts", "kilowatt hours": "kwh",
        "kilobytes": "kb kilobyte kilobytes", "megabytes": "mb megabyte megabytes",
        "gigabytes": "gb gigabyte gigabytes", "terabytes": "tb terabyte terabytes",
        "miles per hour": "mph", "kilometers per hour": "kph kmh",
        "celsius": "c celsius", "fahrenheit": "f fahrenheit", "percent": "percent",
    }.items() for unit in spellings.split()}
"""A unit written after a number, in any of its spellings -> one name (`324 m` = `324 metres`
= `324 meters`). Only after a number (or `square`/`cubic` after one): on its own `m` or `c` is
no unit. `s` (the `1990s`), `t`, `in` and `k` are left out as too ambiguous after a number."""

SEPARATORS = frozenset({",", ";", "/", "|", "\n", "and", "or", "nor", "plus", "versus", "vs"})
"""Tokens that separate the items of an answer (in what remains after the expected items are
found). `and`/`or` are words inside names too; expected items are matched first, so a name
such as `Trinidad and Tobago` is never split when it is expected."""
_PUNCT = frozenset({",", ";", "/", "|", "\n"})
FILLER = frozenset({
    "a", "an", "the", "answer", "answers", "final", "is", "are", "was", "were", "be", "it", "its",
    "they", "them", "these", "those", "this", "that", "there", "of", "in", "on", "at", "to", "as",
    "well", "both", "all", "also", "including", "include", "includes", "namely", "respectively",
    "total", "approximately", "about", "around", "roughly", "nearly", "i", "think", "believe",
    "so", "which", "with", "for", "by", "from", "etc", "only", "just", "exactly",
    "dont", "know", "not", "sure", "unknown", "cannot", "unable", "determine", "unclear"})
"""Words that on their own do not name an answer item (a leftover `the answer is` is not an
extra item; a leftover `Madrid` is)."""
_HEDGES = frozenset({"either", "possibly", "probably", "perhaps", "maybe", "likely"})
"""Hedging words: dropped like filler, so `probably X` is X, and `X or possibly Y` is X plus an
extra item Y (a hedge between candidates fails the rule because Y is extra, not because of
the word)."""
_ARTICLES = frozenset({"a", "an", "the"})
_AND_NAMES = ("trinidad and tobago", "bosnia and herzegovina", "antigua and barbuda",
              "saint kitts and nevis", "st kitts and nevis", "saint vincent and the grenadines",
              "sao tome and principe", "turks and caicos islands", "heard island and mcdonald islands")
"""Names with `and` that a Set gold string must not split at that `and`."""


def _fold(text: str) -> str:
    for pattern, repl in _CASED_ALIASES:
        text = pattern.sub(repl, text)
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    return re.sub(r"['\u2019\u2018`]", "", text)  # apostrophes join: d'Ivoire -> divoire


def _date_token(year: int, month: int, day: int | None = None) -> str:
    if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
        raise ValueError
    return f" date{year:04d}x{month:02d}" + (f"x{day:02d} " if day is not None else " ")


def _dates(text: str) -> str:
    """Dates in any of the usual forms -> one token (`date2021x03x05`, or `date2021x03` for a
    month). Numeric d/m/y vs m/d/y: month first unless the first number exceeds 12 (US order,
    an approximation for ambiguous dates)."""
    def sub(pattern: str, fn: Any) -> None:
        nonlocal text

        def repl(m: re.Match[str]) -> str:
            try:
                return str(fn(m))
            except ValueError:
                return m.group(0)
        text = re.sub(pattern, repl, text)

    day = r"(\d{1,2})(?:st|nd|rd|th)?"
    mon = rf"({_MONTH_RE})\.?"
    sub(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b",
        lambda m: _date_token(int(m[1]), int(m[2]), int(m[3])))
    sub(r"\b(\d{1,2})[/.](\d{1,2})[/.](\d{4})\b",
        lambda m: (_date_token(int(m[3]), int(m[1]), int(m[2])) if int(m[1]) <= 12
                   else _date_token(int(m[3]), int(m[2]), int(m[1]))))
    sub(rf"\b{mon}\s+{day},?\s+(\d{{4}})\b", lambda m: _date_token(int(m[3]), _MONTHS[m[1]], int(m[2])))
    sub(rf"\b{day}\s+(?:of\s+)?{mon},?\s+(\d{{4}})\b",
        lambda m: _date_token(int(m[3]), _MONTHS[m[2]], int(m[1])))
    sub(rf"\b{mon},?\s+(\d{{4}})\b", lambda m: _date_token(int(m[2]), _MONTHS[m[1]]))
    sub(r"\b(\d{4})-(\d{2})\b(?!-)", lambda m: _date_token(int(m[1]), int(m[2])))
    return text


def _numbers(text: str) -> str:
    """Digit groupings, decimals, scale words and percent signs in one spelling each."""
    text = re.sub(r"(?<=\d)[,\u202f\u00a0](?=\d{3}(?!\d))", "", text)  # 99,354 -> 99354
    text = re.sub(r"(?<=\d)[,\u202f\u00a0](?=\d{3}(?!\d))", "", text)  # again for 1,234,567
    text = text.replace("%", " percent ")
    # A currency amount's scale suffix ($5m, EUR 3.2bn, $40k) and `bn` after any number.
    text = re.sub(r"([$\u20ac\u00a3\u00a5]\s?\d+(?:\.\d+)?)\s?(m|mn|bn|b|k)\b",
                  lambda m: f"{m[1]} {_SUFFIX_SCALES[m[2]]}", text)
    text = re.sub(r"(?<=\d)\s?bn\b", " billion", text)
    text = re.sub(r"(?<=\d)\s?(km|mi)\s?/\s?(?:h|hr)\b", lambda m: f" {m[1]} per hour", text)
    # Squared and cubed units (`km2`, `m^3`; NFKD has turned `²` into `2`).
    text = re.sub(r"(?<=\d)\s?(km|m|mi|ft|cm|mm)\^?([23])\b",
                  lambda m: f" {'square' if m[2] == '2' else 'cubic'} {m[1]}", text)

    def scaled(m: re.Match[str]) -> str:
        value = float(m[1]) * _SCALES[m[2]]
        return f" {_num(value)} "
    text = re.sub(r"(\d+(?:\.\d+)?)\s*(thousand|million|billion|trillion)\b", scaled, text)
    text = re.sub(r"\b(\d+)\.(\d+)\b", lambda m: " " + _num(float(m[0])) + " ", text)
    text = re.sub(r"\b(\d+)(?:st|nd|rd|th)\b", r"\1", text)  # 1st -> 1 (ordinals compare as numbers)
    return text


_SUFFIX_SCALES = {"m": "million", "mn": "million", "bn": "billion", "b": "billion", "k": "thousand"}


def _num(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def _words_to_numbers(tokens: list[str]) -> list[str]:
    """Spelled numbers (`two`, `twenty-one`, `one hundred and five`) -> digits (ordinal words
    were turned into `1th`-style digits before)."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t not in _UNITS and t not in _TENS:
            out.append(t)
            i += 1
            continue
        total, current, j = 0, 0, i
        while j < len(tokens):
            w = tokens[j]
            if w in _UNITS:
                current += _UNITS[w]
            elif w in _TENS:
                current += _TENS[w]
            elif w == "hundred":
                current = max(current, 1) * 100
            elif w in _SCALES:
                total += max(current, 1) * _SCALES[w]
                current = 0
            elif w == "and" and j + 1 < len(tokens) and (tokens[j + 1] in _UNITS or tokens[j + 1] in _TENS) \
                    and j > i and tokens[j - 1] in _SCALES:
                pass  # "one hundred and five"
            else:
                break
            j += 1
        out.append(str(total + current))
        i = j
    return out


_TOKEN = re.compile(r"date\d{4}x\d{2}(?:x\d{2})?|\d+(?:\.\d+)?|[^\W\d_]+|\d+|[,;/|\n&()]")


def canonical_tokens(text: str) -> list[str]:
    """The answer text as canonical tokens: accents and case folded, dates and numbers in one
    form, spelled numbers as digits, aliases replaced, articles dropped; item separators kept
    as tokens. Other punctuation (parentheses, dots, quotes, hyphens) separates words."""
    text = _fold(text)
    # Ordinal words first, so `the first of January, 2000` reads as a date.
    text = re.sub(rf"\b({'|'.join(_ORDINALS)})\b", lambda m: f"{_ORDINALS[m[1]]}th", text)
    text = _numbers(_dates(text))
    tokens = _number_units(_apply_aliases(_words_to_numbers(_TOKEN.findall(text))))
    out: list[str] = []
    for i, t in enumerate(tokens):
        if t == "(":
            # A parenthesis that hedges (`(or Madrid)`, `(possibly Madrid)`) starts another item;
            # any other (`(1452-1519)`, `(the capital)`) qualifies the item before it.
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
            if nxt in _HEDGES or nxt == "or":
                out.append(",")
        elif t != ")" and t not in _ARTICLES:
            out.append(t)
    return out


_ALIAS_TOKENS = sorted(((tuple(k.split()), tuple(v.split())) for k, v in ALIASES.items()),
                       key=lambda kv: -len(kv[0]))


def _apply_aliases(tokens: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(tokens):
        for src, dst in _ALIAS_TOKENS:
            if tuple(tokens[i:i + len(src)]) == src:
                out.extend(dst)
                i += len(src)
                break
        else:
            out.append(tokens[i])
            i += 1
    return out


_NUMBER = re.compile(r"\d+(?:\.\d+)?$")


def _number_units(tokens: list[str]) -> list[str]:
    """A unit after a number in one spelling (`_NUMBER_UNITS`); `degrees` before `celsius` or
    `fahrenheit` is dropped (`20 degrees C` = `20°C`)."""
    out: list[str] = []
    for i, t in enumerate(tokens):
        prev = out[-1] if out else ""
        after_number = bool(_NUMBER.match(prev)) or (
            prev in ("square", "cubic") and len(out) > 1 and bool(_NUMBER.match(out[-2])))
        if t in ("degree", "degrees") and _NUMBER.match(prev) and i + 1 < len(tokens) \
                and _NUMBER_UNITS.get(tokens[i + 1]) in ("celsius", "fahrenheit"):
            continue
        if after_number and t in _NUMBER_UNITS:
            out.extend(_NUMBER_UNITS[t].split())
        else:
            out.append(t)
    return out


def _words(tokens: Sequence[str]) -> list[str]:
    return [t for t in tokens if t not in _PUNCT]


# ---- splitting a Set gold string ----------------------------------------------------------

_ABBREV_TAIL = re.compile(r"^(?:[A-Z]\.){1,3}$"
                          r"|^(?:Inc|Ltd|LLC|Co|Corp|Jr|Sr|PLC|GmbH|AG|SA|NV|II|III|IV)\.?$")
"""A comma part that continues the previous item (`Washington, D.C.`, `Acme, Inc.`)."""


def split_gold_items(answer: str) -> list[str]:
    """Items of a Set answer string: on semicolons or new lines when it has any, else on commas
    (a final `and` after the last comma, and `X and Y` in the last part of a comma list, also
    separate items). Commas inside numbers (`1,234`), dates (`March 5, 2021`) and before an
    abbreviation (`Washington, D.C.`, `Acme, Inc.`) do not split. An approximation of how a
    person reads the list; tasks whose gold items are given as a list (the offline source)
    never use it."""
    text = answer.strip()
    if re.search(r"[;\n]", text):
        parts = re.split(r"\s*[;\n]\s*", text)
    else:
        protected = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "\x00", text)
        protected = re.sub(rf"(?i)\b((?:{_MONTH_RE})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?),(\s+\d{{4}})",
                           "\\1\x00\\2", protected)
        raw = [p.replace("\x00", ",") for p in protected.split(",")]
        parts = []
        for p in raw:
            if parts and _ABBREV_TAIL.match(p.strip()):
                parts[-1] = f"{parts[-1]},{p}"
            else:
                parts.append(p)
        if len(parts) >= 2:
            last = re.sub(r"^\s*(?:and|&)\s+", "", parts[-1])
            low = _fold(last)
            if not any(name in " ".join(low.split()) for name in _AND_NAMES):
                parts[-1:] = re.split(r"\s+(?:and|&)\s+", last)
            else:
                parts[-1] = last
    items = [p.strip() for p in parts]
    return [i for i in items if i] or [text]


# ---- the string grader --------------------------------------------------------------------

_ACRONYM = re.compile(r"(?<![\w.])(?:[A-Z]\.){2,}(?!\w)|(?<![\w'])[A-Z]{2,}(?![\w'])")
"""An acronym as written: two or more capitals (`WHO`, `NASA`) or capitals with dots (`U.N.`).
Lower-case `who` is the pronoun, never the organisation."""
_ACRONYM_OPTIONAL = frozenset({"of", "and", "for", "on", "in", "at", "to", "de", "du", "des", "la",
                               "le", "del", "della", "di", "da", "der", "und", "et", "y"})
"""Short words an acronym may leave out (`Union of European Football Associations` = `UEFA`)
or keep (`Department of Defense` = `DOD`); never the first word."""
_CLAUSE_STARTS = frozenset({
    "which", "who", "whose", "whom", "where", "when", "that", "because", "since", "located",
    "situated", "known", "called", "named", "founded", "born", "built", "being", "it", "its",
    "this", "they", "their", "he", "his", "she", "her", "both", "each"})
"""Words that open a clause about what came before (`Paris, which is the capital`, `Einstein,
born in Ulm`): a piece after a separator that starts with one (or with `also` and one)
describes an item and is not one. `as` is left out: `as well as X` adds an item."""
_FRAME_STARTS = frozenset({"according", "based", "after", "following", "from", "per", "given",
                           "having"})
"""Words that open a lead-in before the answer (`Based on my search, ...`, `According to the
report, ...`): the first piece, when it starts with one, names no item itself, and ends at
punctuation, is not an item."""
_ALTERNATIVES = frozenset({"or", "nor", "versus", "vs", "plus"})
"""Separators that end a clause even inside it (another candidate follows); `and` inside a
clause joins its own words (`which is large and old`)."""
_CLAUSE_HEDGES = _HEDGES | {"might", "could", "alternatively", "otherwise", "unless"}
"""A clause holding one of these offers another candidate (`Paris, which could also be Lyon`),
so it is read as an item after all."""
_LINKS = frozenset({
    "is", "are", "was", "were", "be", "been", "being", "of", "in", "at", "on", "near", "from",
    "by", "for", "with", "to", "into", "between", "within", "which", "who", "whose", "where",
    "when", "that", "has", "had", "have", "its", "his", "her", "their", "located", "situated",
    "known", "called", "named", "born", "founded", "built"})
"""Words that tie a name to a found item as a description (`Paris is the capital of France`,
`the Seine in Paris`): a capitalised word with one of these between it and the found item
qualifies the item; without one (`Barcelona Madrid`) it is another candidate."""
_APPOSITIVE = re.compile(r",\s*(?=(?:the|a|an)\s+[a-z])")
"""`, the capital of France` after an item: a description (read as `, which is the ...`). Only in
a prediction with some capital letter, where a lower-case word after `the` is no name."""


def _acronyms(text: str) -> set[str]:
    """The acronyms written in `text`, lower case without dots (`U.N.` -> `un`)."""
    return {m[0].replace(".", "").casefold() for m in _ACRONYM.finditer(text)}


def _item_acronym(item: str) -> str | None:
    """The letters of an expected item that is an acronym (`WHO`, `the U.N.`), else None."""
    text = re.sub(r"^(?:the|The|THE)\s+", "", item.strip())
    if re.fullmatch(r"(?:[A-Z]\.){2,}|[A-Z]{2,}", text):
        return text.replace(".", "").casefold()
    return None


def _spells(words: Sequence[str], letters: str) -> bool:
    """Whether the initials of `words` (two or more) spell `letters`, words of
    `_ACRONYM_OPTIONAL` after the first being kept or left out."""
    def go(i: int, k: int) -> bool:
        if i == len(words):
            return k == len(letters)
        w = words[i]
        if k < len(letters) and w[0] == letters[k] and go(i + 1, k + 1):
            return True
        return i > 0 and w in _ACRONYM_OPTIONAL and go(i + 1, k)
    return len(words) >= 2 and all(w.isalpha() for w in words) and go(0, 0)


@dataclass
class _Match:
    tokens: list[str]
    used: list[bool] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.used = [False] * len(self.tokens)

    def _take(self, first: int, last: int) -> None:
        for p in range(first, last + 1):
            self.used[p] = True

    def _next_word(self, pos: int) -> int | None:
        """The next unused word after `pos` (unused punctuation between skipped), or None."""
        pos += 1
        while pos < len(self.tokens) and self.tokens[pos] in _PUNCT and not self.used[pos]:
            pos += 1
        return pos if pos < len(self.tokens) and not self.used[pos] else None

    def find(self, words: Sequence[str]) -> bool:
        """Consume the first unused occurrence of `words` (punctuation between them allowed)."""
        if not words:
            return False
        for start in range(len(self.tokens)):
            if self.used[start] or self.tokens[start] != words[0]:
                continue
            pos, k = start, 1
            while k < len(words):
                nxt = self._next_word(pos)
                if nxt is None or self.tokens[nxt] != words[k]:
                    break
                pos, k = nxt, k + 1
            if k == len(words):
                self._take(start, pos)
                return True
        return False

    def find_acronym(self, letters: str, written: set[str]) -> bool:
        """Consume an acronym spelling `letters` that the prediction writes in capitals
        (`written`, from `_acronyms`): one token (`who`) or its dotted letters (`u n`)."""
        return letters in written and (self.find([letters]) or self.find(list(letters)))

    def find_expansion(self, letters: str, proper: set[str]) -> bool:
        """Consume the first unused run of capitalised words (`proper`) whose initials spell
        `letters` (`World Health Organization` for `who`). Used for acronyms of three or more
        letters only: two initials (`EU`) are spelled by too many unrelated names."""
        def end_of(pos: int, k: int) -> int | None:
            w = self.tokens[pos]
            nxt = self._next_word(pos)
            if w.isalpha() and w[0] == letters[k] and (w in proper or (k and w in _ACRONYM_OPTIONAL)):
                if k + 1 == len(letters):
                    return pos
                if nxt is not None and (end := end_of(nxt, k + 1)) is not None:
                    return end
            if k and w in _ACRONYM_OPTIONAL and nxt is not None:
                return end_of(nxt, k)
            return None
        if len(letters) < 3:
            return False
        for start in range(len(self.tokens)):
            if not self.used[start] and self.tokens[start] in proper and \
                    (end := end_of(start, 0)) is not None:
                self._take(start, end)
                return True
        return False


@dataclass
class _Piece:
    """What lies between two separators of the prediction."""

    idx: list[int] = field(default_factory=list)
    """Positions of its tokens (found ones included)."""
    clause: bool = False
    """It opens with a clause word (`_CLAUSE_STARTS`)."""
    frame: bool = False
    """It is the first piece and opens with a lead-in word (`_FRAME_STARTS`)."""
    closed_by: str = ""
    """The separator that ends it ("" at the end of the prediction)."""


def _pieces(pred: Sequence[str], used: Sequence[bool], written: set[str]) -> list[_Piece]:
    """The prediction cut at unused separators; a clause or a lead-in runs on over `and`."""
    pieces = [_Piece()]
    for i, (tok, is_used) in enumerate(zip(pred, used, strict=True)):
        cur = pieces[-1]
        if not is_used and tok in SEPARATORS:
            if (cur.clause or cur.frame) and tok not in _PUNCT and tok not in _ALTERNATIVES:
                continue
            cur.closed_by = tok
            pieces.append(_Piece())
            continue
        if all(pred[j] == "also" for j in cur.idx) and not is_used:
            if len(pieces) > 1 and tok in _CLAUSE_STARTS and tok not in written:
                cur.clause = True
            elif len(pieces) == 1 and not cur.idx and tok in _FRAME_STARTS:
                cur.frame = True
        cur.idx.append(i)
    return pieces


def _linked(i: int, piece: _Piece, pred: Sequence[str], used: Sequence[bool]) -> bool:
    """Whether a link word (`_LINKS`) lies between token `i` and the nearest found token of its
    piece."""
    found_at = [j for j in piece.idx if used[j]]
    if not found_at:
        return False
    j = min(found_at, key=lambda j: abs(j - i))
    return any(t in _LINKS for t in pred[min(i, j) + 1:max(i, j)])


_NEGATORS = frozenset({"not", "never", "isnt", "wasnt", "arent", "werent", "neither"})
"""Words that reject what follows them (`not 1990`, `it wasn't Paris`, `neither X nor Y`)."""
_NOT_NEGATING = frozenset({"only", "just", "sure", "certain", "known", "clear", "available"})
"""Words after a negator that make it no rejection of a candidate: `not only X but also Y`
affirms X; `not sure` hedges the speaker's knowledge."""
_CONTRASTS = (("rather", "than"), ("instead", "of"), ("as", "opposed", "to"))
"""Phrases that reject what follows them (`Lyon rather than Paris`)."""
_NEGATION_ENDS = _PUNCT | frozenset({"but", "it", "its", "they", "which", "so", "because",
                                     "however", "instead", "rather"})
"""Where the scope of a rejection ends: the next separator mark or the clause that follows."""


def _negated(pred: Sequence[str], expected_words: Sequence[Sequence[str]]) -> list[int]:
    """Positions of the candidates the prediction rejects, with the words that reject them
    (`not`, `rather than`) and a `but` that opens the affirmed alternative. A rejected
    candidate is neither given nor extra: the answer is what remains. A negator that an expected
    item holds itself (`Not Fade Away`) rejects nothing."""
    own = {w for words in expected_words for w in words}
    out: list[int] = []
    i = 0
    while i < len(pred):
        start = None
        if pred[i] in _NEGATORS and pred[i] not in own and (
                i + 1 < len(pred) and pred[i + 1] not in _NOT_NEGATING):
            start = i + 1
        else:
            for phrase in _CONTRASTS:
                if tuple(pred[i:i + len(phrase)]) == phrase and not own & set(phrase):
                    start = i + len(phrase)
                    break
        if start is None:
            i += 1
            continue
        end = start
        while end < len(pred) and pred[end] not in _NEGATION_ENDS:
            end += 1
        if end == start:  # nothing rejected (`not.`)
            i += 1
            continue
        if end < len(pred) and pred[end] == "but":
            end += 1
        out.extend(range(i, end))
        i = end
    return out


def string_grade(prediction: str, expected: Sequence[str]) -> Outcome:
    """Which expected items the prediction contains, and what else it lists, without an LLM.

    Both sides are put in canonical form (`canonical_tokens`: `99,354` = `99354`, `two` = `2`,
    `USA` = `United States`, `Kiev` = `Kyiv`, `5 March 2021` = `2021-03-05`, `324 m` =
    `324 metres`, ...). Each expected item (longest first) is looked for as a whole-word phrase
    in the prediction and consumed where found; an item not found as written is found as its
    acronym (`WHO`, in capitals, for `World Health Organization`) or, when it is an acronym, as
    capitalised words whose initials spell it. A found item's other form given beside it
    (`World Health Organization (WHO)`) is consumed too. What is left is split at separators
    (`,` `;` `/` `and` `or` ...): a leftover piece that shares no separator-free stretch with a
    found item, and holds a word that is not filler, is an excessive item (so `Barcelona or
    Madrid` for `Barcelona` has the extra `Madrid`, and a 10-item list for a 2-item gold has 8).
    Words next to a found item without a separator (`99,354 people`, `Paris is the capital of
    France`) qualify it and are not items, unless they look like more candidates. A piece that
    opens a clause (`, which is the capital`, `, the capital of France`, `, born in Ulm`) or a
    lead-in (`Based on my search, ...`) describes and is no item, unless it hedges (`, which
    could also be Lyon`).

    A candidate the prediction rejects (`not 1990; it was 1991`, `Paris, not Lyon`, `it was not
    Paris but Lyon`, `Lyon rather than Paris`) is neither found nor extra (`_negated`): the
    answer is what the prediction affirms.

    What it cannot do, unlike a judge: accept paraphrases and aliases not in `ALIASES`, numbers
    within a tolerance or in another unit (`0.324 km` for `324 m`), or an item split by words of
    its own; a sentence whose clauses open with other words may still read as extra items."""
    text = _APPOSITIVE.sub(", which is ", prediction) if re.search("[A-Z]", prediction) else prediction
    pred = canonical_tokens(text)
    m = _Match(pred)
    written, proper = _acronyms(prediction), _proper_words(prediction)
    gold = [_words(canonical_tokens(e)) for e in expected]
    for i in _negated(pred, gold):  # a rejected candidate is neither found nor extra
        m.used[i] = True
    acronym = [_item_acronym(e) for e in expected]
    order = sorted(range(len(expected)), key=lambda i: -len(gold[i]))
    found = [False] * len(expected)
    for i in order:
        found[i] = m.find(gold[i])
    for i in order:
        acr = acronym[i]
        if not found[i] and acr is not None:
            found[i] = m.find_expansion(acr, proper)
        elif not found[i]:
            found[i] = any(_spells(gold[i], a) and m.find_acronym(a, written) for a in sorted(written))
    for i in order:  # the other form of a found item, given beside it, is the same item
        acr = acronym[i]
        if found[i] and acr is not None:
            while m.find_expansion(acr, proper):
                pass
        elif found[i]:
            for a in sorted(written):
                while _spells(gold[i], a) and m.find_acronym(a, written):
                    pass
    expected_forms = {" ".join(g) for g in gold}
    found_words = sum(m.used)
    excessive: list[str] = []
    for piece in _pieces(pred, m.used, written):
        leftover = [i for i in piece.idx if not m.used[i]]
        words = [pred[i] for i in leftover]
        content = [i for i in leftover if pred[i] not in FILLER and pred[i] not in _HEDGES]
        if not content:
            continue
        touched = len(leftover) < len(piece.idx)
        hedged = any(w in _CLAUSE_HEDGES for w in words)
        if not hedged and (piece.clause or (piece.frame and not touched and piece.closed_by in _PUNCT)):
            continue
        if touched:
            # Words beside a found item qualify it, unless they look like more candidates: a
            # capitalised name not tied to the item by a link word (`Barcelona Madrid`), or
            # more words than the items themselves (`rhine danube elbe oder vistula ...`).
            names = [i for i in content if pred[i] in proper and not _linked(i, piece, pred, m.used)]
            if not names and len(content) <= max(3, found_words):
                continue
        item = " ".join(words)
        if " ".join(pred[i] for i in content) in expected_forms or item in expected_forms:
            continue  # the same item given twice is not an extra one
        if item not in excessive:
            excessive.append(item)
    return outcome(found, excessive)


def _proper_words(text: str) -> set[str]:
    """Canonical forms of the capitalised words of `text` (names, as opposed to qualifiers)."""
    return {t for w in re.findall(r"(?<![\w'])[A-Z][\w'-]*", text) for t in canonical_tokens(w)
            if t not in FILLER and not t.isdigit()}


def expected_items(answer: str, answer_type: str, items: Sequence[str] | None = None) -> list[str]:
    """The ground-truth items of a question: given `items` when the source lists them, else the
    whole answer for a Single answer, `split_gold_items` for a Set answer."""
    if items:
        return [str(i) for i in items]
    return split_gold_items(answer) if answer_type == SET else [answer.strip()]
