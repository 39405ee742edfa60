"""WebShop's purchase reward, ported from `web_agent_site/engine/goal.py` (Yao et al., 2022).

The port keeps the original's arithmetic and its quirks on purpose, so that scores on the offline
catalog mean what WebShop scores mean:

- r_type: 1 when the bought product shares the goal's query, or >= 2 levels of its category path
  (as a set, order ignored), or more than 20 % of the goal title's nouns; 0.5 otherwise; then 0.1
  when the noun overlap is below 10 % and 0 when it is zero (these two apply even if the query or
  the category matched).
- attributes: a goal attribute matches when fuzz.token_set_ratio with one of the product's
  attributes is > 85, or when it is a substring of the lower-cased title, features or description.
- options: every *bought* option value (after `normalize_color`, applied to all options as in the
  original) counts once: exact membership in the goal options for `size`, token_set_ratio > 85
  for the others, or a substring of the title / features / description. The count is not capped,
  so an extra option that happens to appear in the title can push the total above 1 (as in
  WebShop).
- price: 1 when the price is <= price_upper.
- total = (attribute matches + option matches + r_price) / (#goal attributes + #goal options + 1),
  times r_type.

One deliberate deviation: the original finds title nouns with spaCy's `en_core_web_lg` tagger
(NOUN/PROPN tokens), a 500 MB model that cannot be fetched here. `title_nouns` keeps every
alphabetic token that is not in a closed list of function words, adjectives and participles
(`NOT_NOUNS`), which is exact for the offline catalog's vocabulary (its generator draws its
descriptive words from that list) and close to spaCy elsewhere. The `official` source of the task
uses WebShop's own code, so this only concerns the offline catalog.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from thefuzz import fuzz

EXACT_MATCH_OPTS = ("size",)
PRICE_RANGE = [10.0 * i for i in range(1, 100)]
"""Candidate price caps of goals (10, 20, …, 990 dollars), as in goal.py."""
FUZZY_THRESHOLD = 85
"""token_set_ratio must be strictly above this for a fuzzy attribute/option match."""

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

# Words spaCy would not tag NOUN/PROPN in product titles: function words, numbers' companions,
# adjectives, participles and adverbs. The offline catalog's descriptive words all come from here.
NOT_NOUNS = frozenset("""
a an the and or but nor for with without of in on to by from at as into onto over under up down
out off per via plus than then so too very more most less least all any each every both either
some no not only just also this that these those it its your you yours our ours we us my me
their they them his her he she is are was were be been being am do does did has have had will can
may might must should would could shall about above across after against along among around
before behind below beneath beside between beyond during except inside near outside since through
throughout toward towards until upon within
new old natural organic original premium classic professional portable wireless adjustable
waterproof lightweight breathable durable soft comfortable casual large small medium extra mini
compact heavy sturdy modern vintage rustic elegant stylish cute fresh sweet salty spicy healthy
free non long lasting quick fast easy daily sensitive dry oily gentle moisturizing anti ultra super
high low best perfect great lovely hot cold warm cool rechargeable foldable stackable ergonomic
upholstered padded tufted mid slim thin thick wide narrow tall short full half double single
triple multi unisex mens womens kids big little deep dark light bright pure raw whole real true
black white red blue green grey gray pink purple yellow brown beige navy silver golden clear
matte glossy shiny smooth silky rich creamy crunchy chewy roasted salted unsalted toasted sugared
unscented scented hypoallergenic vegan keto kosher based friendly resistant
proof safe ready certified tested approved included compatible universal handmade made crafted
designed built sealed resealable individually wrapped packed filled lined
insulated reinforced braided plated coated treated washable removable reusable disposable
stretchy elastic seamless fitted loose relaxed regular straight skinny cropped hooded zippered
quilted knitted woven printed embroidered decorative ornamental industrial minimalist
contemporary traditional farmhouse bohemian luxurious luxury fancy simple basic essential
everyday indoor outdoor active athletic sporty stable silent quiet loud smart digital electric
electronic automatic manual cancelling wired dual twin ideal
""".split())

_TOKEN = re.compile(r"[a-z][a-z]+")
_POSSESSIVE = re.compile(r"['’]s\b")


def normalize_color(value: str) -> str:
    """The first COLOR_SET entry contained in `value`, else `value` (goal.py applies this to
    every option, not only colors)."""
    for color in COLOR_SET:
        if color in value:
            return color
    return value


def title_nouns(title: str) -> list[str]:
    """The title's nouns, lower-cased, with repeats (the original divides by this list's length
    and intersects sets). Stand-in for spaCy's NOUN/PROPN tags; see the module docstring."""
    text = _POSSESSIVE.sub("", title.lower())
    return [t for t in _TOKEN.findall(text) if t not in NOT_NOUNS]


class TypeReward(TypedDict):
    r_type: float
    query_match: bool
    category_match: bool
    title_score: float


def get_type_reward(purchased: Mapping[str, Any], goal: Mapping[str, Any]) -> TypeReward:
    """Is the bought product of the wanted kind (same query, category or title nouns)?"""
    query_match = purchased["query"] == goal["query"]
    bought_path = {x.strip() for x in purchased["product_category"].split("›")}
    goal_path = {x.strip() for x in goal["product_category"].split("›")}
    category_match = len(bought_path & goal_path) >= 2

    bought_nouns = title_nouns(purchased["name"])
    wanted_nouns = title_nouns(goal["name"])
    overlap = len(set(bought_nouns) & set(wanted_nouns))
    title_score = 0.2 if not wanted_nouns else overlap / len(wanted_nouns)

    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return TypeReward(r_type=r_type, query_match=query_match, category_match=category_match,
                      title_score=title_score)


def _in_product_text(needle: str, product: Mapping[str, Any]) -> bool:
    # ' '.join over a string joins its characters, as the original does when BulletPoints is a
    # plain string; kept for fidelity.
    return (needle in product["Title"].lower()
            or needle in " ".join(product["BulletPoints"]).lower()
            or needle in product["Description"].lower())


def get_attribute_reward(purchased: Mapping[str, Any], goal: Mapping[str, Any]) -> tuple[float, int]:
    """(fraction, count) of goal attributes found on the bought product."""
    goal_attrs: Sequence[str] = goal["attributes"]
    matches = 0
    for g_attr in goal_attrs:
        matched = False
        for p_attr in purchased["Attributes"]:
            if fuzz.token_set_ratio(p_attr, g_attr) > FUZZY_THRESHOLD:
                matches += 1
                matched = True
                break
        if not matched and _in_product_text(g_attr, purchased):
            matches += 1
    return matches / len(goal_attrs), matches


def get_option_reward(purchased: Mapping[str, Any], goal_options: Sequence[str],
                      purchased_options: Mapping[str, str]) -> tuple[float | None, int]:
    """(fraction or None when the goal has no options, count) of bought options that match."""
    bought = {k: normalize_color(v) for k, v in purchased_options.items()}
    wanted = [normalize_color(o) for o in goal_options]
    matches = 0
    for key, value in bought.items():
        matched = False
        if key.lower() in EXACT_MATCH_OPTS:
            if value in wanted:
                matches += 1
                matched = True
        else:
            for g_option in wanted:
                if fuzz.token_set_ratio(g_option, value) > FUZZY_THRESHOLD:
                    matches += 1
                    matched = True
                    break
        if not matched and _in_product_text(value, purchased):
            matches += 1
    return (matches / len(wanted) if wanted else None), matches


def goal_option_values(goal: Mapping[str, Any]) -> list[str]:
    """Goal options as a list (human goals store a list, synthetic ones a dict)."""
    options = goal["goal_options"]
    return list(options.values()) if isinstance(options, Mapping) else list(options)


def get_reward_info(purchased: Mapping[str, Any], goal: Mapping[str, Any], price: float,
                    options: Mapping[str, str]) -> tuple[float, dict[str, Any]]:
    """The total reward and its parts (goal.py's `verbose=True` info)."""
    type_info = get_type_reward(purchased, goal)
    r_price = (price <= goal["price_upper"]) if goal["price_upper"] > 0 else None
    r_att, n_att = get_attribute_reward(purchased, goal)
    r_option, n_opt = get_option_reward(purchased, goal_option_values(goal), options)
    denominator = len(goal["attributes"]) + len(goal["goal_options"]) + 1
    total = (n_att + n_opt + float(r_price or 0)) / denominator * type_info["r_type"]
    info: dict[str, Any] = {
        "r_type": type_info["r_type"], "r_att": r_att,
        "w_att": len(goal["attributes"]) / denominator,
        "query_match": type_info["query_match"], "category_match": type_info["category_match"],
        "title_score": type_info["title_score"],
    }
    if r_option is not None:
        info["r_option"] = r_option
        info["w_option"] = len(goal["goal_options"]) / denominator
    if r_price is not None:
        info["r_price"] = r_price
        info["w_price"] = 1 / denominator
    return total, info


def get_reward(purchased: Mapping[str, Any], goal: Mapping[str, Any], price: float,
               options: Mapping[str, str]) -> float:
    """WebShop's reward for buying `purchased` at `price` with the chosen `options`."""
    return get_reward_info(purchased, goal, price, options)[0]
