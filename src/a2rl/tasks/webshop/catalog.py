"""The offline WebShop catalog: WebShop's data formats, product prices, BM25 search and goals.

The shipped files under `webshop/data/` use WebShop's own formats so that code written against
one reads the other:

- `items_shuffle.json`: raw products as in WebShop's `items_shuffle*.json` (asin, name, category,
  query, product_category, pricing, small_description, full_description, customization_options,
  images).
- `items_ins_v2.json`: `{asin: {"attributes": [...]}}` as in `items_ins_v2*.json`.
- `reviews.json`: `[{"asin", "average_rating", "reviews": [{"title", "stars", "review"}]}]`.
- `goals_train.json`: train goals in the form `get_human_goals` builds them (asin, category,
  query, name, product_category, instruction_text, attributes, price_upper, goal_options, weight).

`python -m a2rl.tasks.webshop.make_data` generates them deterministically. Held-out goals are not shipped:
`generate_goals` draws them at run time from a seed the agent does not have, with the same
generator that made the train goals, excluding every train goal.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import bm25s

from a2rl.tasks.webshop.reward import PRICE_RANGE

DATA_DIR = Path(__file__).resolve().parent / "data"
PRODUCTS_FILE = "items_shuffle.json"
ATTRIBUTES_FILE = "items_ins_v2.json"
REVIEWS_FILE = "reviews.json"
TRAIN_GOALS_FILE = "goals_train.json"

SEARCH_RETURN_N = 50
"""Search results per query (engine.py)."""
PRODUCT_WINDOW = 10
"""Results per page (engine.py)."""
PRICE_SEED = 233
"""Seed of the prices drawn for products priced as a range (WebShop draws them uniformly at
server start); fixed so that a goal's price cap and the price paid agree across runs."""

Product = dict[str, Any]
Goal = dict[str, Any]


# --------------------------------------------------------------------------- products


def process_products(raw_products: Sequence[Mapping[str, Any]],
                     attributes: Mapping[str, Mapping[str, Any]],
                     reviews: Sequence[Mapping[str, Any]]) -> list[Product]:
    """Raw products -> the dicts WebShop's engine works with (port of `load_products`): Title,
    Description, BulletPoints, Reviews, Rating, numeric `pricing` and a `Price` tag, lower-cased
    `options` ('/' shown as ' | '), Attributes, MainImage."""
    all_reviews = {r["asin"]: r["reviews"] for r in reviews}
    all_ratings = {r["asin"]: r["average_rating"] for r in reviews}
    products: list[Product] = []
    seen: set[str] = set()
    for raw in raw_products:
        asin = raw["asin"]
        if asin == "nan" or len(asin) > 10 or asin in seen:
            continue
        seen.add(asin)
        p: Product = json.loads(json.dumps(raw))  # a deep copy: the raw data stay untouched
        p["Title"] = p["name"]
        p["Description"] = p["full_description"]
        p["Reviews"] = [_review(r) for r in all_reviews.get(asin, [])]
        p["Rating"] = all_ratings.get(asin, "N.A.")
        bullets = p["small_description"]
        p["BulletPoints"] = bullets if isinstance(bullets, list) else [bullets]
        pricing = p.get("pricing")
        if not pricing:
            p["pricing"], p["Price"] = [100.0], "$100.0"
        else:
            values = [float(Decimal(re.sub(r"[^\d.]", "", x))) for x in pricing.split("$")[1:]]
            p["Price"] = f"${values[0]}" if len(values) == 1 else f"${values[0]} to ${values[1]}"
            p["pricing"] = values[:2]
        options: dict[str, list[str]] = {}
        for name, contents in (p.get("customization_options") or {}).items():
            if contents is None:
                continue
            options[name.lower()] = [c["value"].strip().replace("/", " | ").lower() for c in contents]
        p["options"] = options
        p["Attributes"] = list(attributes.get(asin, {}).get("attributes") or ["DUMMY_ATTR"])
        p["MainImage"] = p["images"][0] if p.get("images") else ""
        p["query"] = p["query"].lower().strip()
        products.append(p)
    return products


def _review(raw: Mapping[str, Any]) -> dict[str, Any]:
    r = dict(raw)
    if "score" not in r:
        r["score"] = r.pop("stars")
    r["body"] = r.pop("review") if "review" in r else ""
    return r


def product_prices(products: Sequence[Product], seed: int = PRICE_SEED) -> dict[str, float]:
    """The price paid for each product (`generate_product_prices`): the single price, a uniform
    draw inside a range, or 100 when unknown."""
    rng = random.Random(seed)
    prices: dict[str, float] = {}
    for p in products:
        pricing = p["pricing"]
        if not pricing:
            prices[p["asin"]] = 100.0
        elif len(pricing) == 1:
            prices[p["asin"]] = float(pricing[0])
        else:
            prices[p["asin"]] = rng.uniform(*pricing[:2])
    return prices


@dataclass
class Catalog:
    products: list[Product]
    prices: dict[str, float]
    by_asin: dict[str, Product] = field(init=False)

    def __post_init__(self) -> None:
        self.by_asin = {p["asin"]: p for p in self.products}

    @classmethod
    def from_raw(cls, raw_products: Sequence[Mapping[str, Any]],
                 attributes: Mapping[str, Mapping[str, Any]],
                 reviews: Sequence[Mapping[str, Any]]) -> Catalog:
        products = process_products(raw_products, attributes, reviews)
        return cls(products=products, prices=product_prices(products))


@cache
def load_catalog(data_dir: Path = DATA_DIR) -> Catalog:
    """The shipped catalog (read once per process)."""
    read = lambda name: json.loads((data_dir / name).read_text())  # noqa: E731
    return Catalog.from_raw(read(PRODUCTS_FILE), read(ATTRIBUTES_FILE), read(REVIEWS_FILE))


def load_train_goals(data_dir: Path = DATA_DIR) -> list[Goal]:
    goals: list[Goal] = json.loads((data_dir / TRAIN_GOALS_FILE).read_text())
    return goals


# --------------------------------------------------------------------------- search

# Lucene's default English stop words (the set pyserini's analyzer removes).
STOPWORDS = frozenset("a an and are as at be but by for if in into is it no not of on or such that "
                      "the their then there these they this to was will with".split())
_SEARCH_TOKEN = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")


def _s_stem(token: str) -> str:
    """Harman's S-stemmer: plural endings only (a stand-in for Lucene's Porter stemmer that
    needs no extra package and never changes between installations)."""
    if len(token) > 3 and token.endswith("ies") and not token.endswith(("eies", "aies")):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("es") and not token.endswith(("aes", "ees", "oes")):
        return token[:-1]
    if len(token) > 2 and token.endswith("s") and not token.endswith(("us", "ss")):
        return token[:-1]
    return token


def analyze(text: str) -> list[str]:
    """Search analyzer: lower case, drop possessives and stop words, stem plurals."""
    text = re.sub(r"['’]s\b", "", text.lower())
    return [_s_stem(t) if t.isalpha() else t for t in _SEARCH_TOKEN.findall(text)
            if t not in STOPWORDS]


def search_document(p: Product) -> str:
    """The indexed text of a product, as WebShop's `convert_product_file_format.py` builds it:
    title, description, first bullet point and the options."""
    option_text = ", and ".join(f"{name}: {', '.join(values)}" for name, values in p["options"].items())
    return " ".join([p["Title"], p["Description"], p["BulletPoints"][0] if p["BulletPoints"] else "",
                     option_text]).lower()


class ProductSearch:
    """BM25 over the catalog (bm25s with Lucene's scoring and pyserini's k1=0.9, b=0.4). Results
    are the matching products by descending score, ties broken by catalog order."""

    def __init__(self, products: Sequence[Product]) -> None:
        self.products = list(products)
        self._bm25 = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
        self._bm25.index([analyze(search_document(p)) or [""] for p in self.products],
                         show_progress=False)

    def search(self, keywords: str | Sequence[str], k: int = SEARCH_RETURN_N) -> list[Product]:
        text = keywords if isinstance(keywords, str) else " ".join(keywords)
        tokens = analyze(text)
        if not tokens:
            return []
        scores = self._bm25.get_scores(tokens)
        hits = sorted((i for i in range(len(self.products)) if scores[i] > 0),
                      key=lambda i: (-float(scores[i]), i))
        return [self.products[i] for i in hits[:k]]


@cache
def catalog_search(data_dir: Path = DATA_DIR) -> ProductSearch:
    return ProductSearch(load_catalog(data_dir).products)


# --------------------------------------------------------------------------- goals

_TEMPLATES = (
    "i am looking for {attrs} {query}{options}",
    "i need {attrs} {query}{options}",
    "i want to buy {query} which {verb} {attrs}{options}",
    "find me {attrs} {query}{options}",
    "i would like {attrs} {query}{options}",
    "i'm looking for {query} that {verb} {attrs}{options}",
)


def _join(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _option_phrase(name: str, value: str) -> str:
    if name == "size":
        return f"size {value}"
    if name in ("color", "flavor", "scent", "style"):
        return f"{value} {name}"
    return value


def instruction_for(rng: random.Random, query: str, attrs: Sequence[str],
                    options: Mapping[str, str]) -> str:
    """A human-style instruction (lower case, like WebShop's human goals) without the price."""
    template = rng.choice(_TEMPLATES)
    phrases = [_option_phrase(k, v) for k, v in options.items()]
    option_text = f" in {_join(phrases)}" if phrases else ""
    verb = "are" if query.endswith("s") else "is"
    return template.format(attrs=_join(list(attrs)), query=query, options=option_text, verb=verb)


def price_cap(price: float, rng: random.Random) -> tuple[float, str]:
    """`get_human_goals`' price cap: two of the four round prices above the product's price, the
    larger one is the cap; none when fewer than two exist."""
    candidates = [p for p in PRICE_RANGE if p > price][:4]
    if len(candidates) < 2:
        return 1000000.0, ""
    _, upper = sorted(rng.sample(candidates, 2))
    return upper, f", and price lower than {upper:.2f} dollars"


def goal_key(goal: Mapping[str, Any]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """What makes two goals the same request: product, attribute set and option set."""
    return goal["asin"], tuple(sorted(goal["attributes"])), tuple(sorted(goal["goal_options"]))


def generate_goals(catalog: Catalog, seed: int, n: int, *,
                   exclude: Collection[Goal] = ()) -> list[Goal]:
    """`n` distinct human-style goals drawn from `seed`, none equal to (same key or same
    instruction text as) a goal in `exclude`."""
    rng = random.Random(seed)
    taken = {goal_key(g) for g in exclude}
    texts = {g["instruction_text"] for g in exclude}
    goals: list[Goal] = []
    products = [p for p in catalog.products if p["Attributes"] != ["DUMMY_ATTR"]]
    for _ in range(200 * n):
        if len(goals) == n:
            break
        p = rng.choice(products)
        k = min(rng.choice((1, 2, 2, 3)), len(p["Attributes"]))
        attrs = rng.sample(p["Attributes"], k)
        options = {name: rng.choice(values) for name, values in p["options"].items() if values}
        upper, price_text = price_cap(catalog.prices[p["asin"]], rng)
        text = instruction_for(rng, p["query"], attrs, options).strip(".") + price_text
        goal: Goal = {
            "asin": p["asin"], "category": p["category"], "query": p["query"], "name": p["name"],
            "product_category": p["product_category"], "instruction_text": text,
            "attributes": attrs, "price_upper": upper, "goal_options": list(options.values()),
            "weight": 1,
        }
        key = goal_key(goal)
        if key in taken or text in texts:
            continue
        taken.add(key)
        texts.add(text)
        goals.append(goal)
    if len(goals) < n:
        raise ValueError(f"could only draw {len(goals)} distinct goals of {n} from the catalog")
    return goals
