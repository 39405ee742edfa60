"""WebShop as a text environment: an offline simulator of WebShop's text env, and an adapter to the
official one (`web_agent_site`, Yao et al., 2022).

The offline env reproduces `WebAgentTextEnv(observation_mode="text")`: each page is its visible
texts joined by " [SEP] ", and the actions are `search[keywords]` and `click[text]`, with the
original's semantics:

- search page: `WebShop [SEP] Instruction: [SEP] <instruction> [SEP] Search`
- results page (10 of at most 50 hits a page): `Instruction: [SEP] <instruction> [SEP] Back to
  Search [SEP] Page 1 (Total results: 50) [SEP] < Prev (from page 2) [SEP] Next > (when more)
  [SEP] <ASIN> [SEP] <title> [SEP] <price> [SEP] …`
- item page: `Instruction: [SEP] … [SEP] Back to Search [SEP] < Prev [SEP] <option name> [SEP]
  <value> [SEP] … [SEP] <title> [SEP] Price: <price> [SEP] Rating: <rating> [SEP] Description
  [SEP] Features [SEP] Reviews [SEP] Buy Now`; clicking an option re-renders the same page (the
  text mode does not mark the chosen options);
- Description / Features / Reviews pages: `… [SEP] Back to Search [SEP] < Prev [SEP] <content>`.

`search[…]` works on every page (as in the original, which never checks for the search bar);
`click[x]` works when x, case-insensitively, is a clickable of the current page: a button, a
product's ASIN on the results page, or an option value on the item page. `< Prev` goes back one
page (results page → previous results page, item page → results, sub-page → item page) and
`Back to Search` starts over. `click[Buy Now]` ends the episode with WebShop's reward. Any other
action changes nothing and returns the same page.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from a2rl._errors import A2RLError
from a2rl.envs import StepResult
from a2rl.tasks.webshop.catalog import (
    PRODUCT_WINDOW,
    Catalog,
    Goal,
    Product,
    ProductSearch,
    catalog_search,
    load_catalog,
)
from a2rl.tasks.webshop.reward import get_reward_info

SEP = " [SEP] "
END_BUTTON = "Buy Now"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BACK_TO_SEARCH = "Back to Search"
SUB_PAGES = ("Description", "Features", "Reviews")

PageKind = Literal["search", "results", "item", "sub", "done"]
_ACTION = re.compile(r"(.+)\[(.+)\]")


def parse_env_action(action: str) -> tuple[str, str | None]:
    """WebShop's own action parser (`engine.parse_action`): `name[arg]`, greedy, no stripping."""
    m = _ACTION.match(action)
    return (action, None) if m is None else (m[1], m[2])


@dataclass
class _Clickable:
    kind: Literal["button", "product", "option"]
    text: str
    option_name: str | None = None


@dataclass
class _Session:
    page: PageKind = "search"
    keywords: list[str] | None = None
    page_num: int = 1
    results: list[Product] = field(default_factory=list)
    asin: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    sub_page: str | None = None
    reward: float = 0.0
    reward_info: dict[str, Any] = field(default_factory=dict)


class WebShopTextEnv:
    """One WebShop episode on the offline catalog, for one goal (a `get_human_goals` dict)."""

    def __init__(self, goal: Goal, catalog: Catalog | None = None,
                 search: ProductSearch | None = None) -> None:
        self.goal = goal
        self.catalog = catalog or load_catalog()
        if search is None:
            search = catalog_search() if catalog is None else ProductSearch(self.catalog.products)
        self.engine = search
        self.session = _Session()
        self._clickables: dict[str, _Clickable] = {}

    # ------------------------------------------------------------------ Env protocol

    def reset(self) -> str:
        self.session = _Session()
        return self._render()

    def step(self, action: str) -> StepResult:
        s = self.session
        if s.page == "done":
            return StepResult(self.observation, 0.0, True)
        name, arg = parse_env_action(action)
        arg = arg.lower() if arg is not None else None
        if name == "search" and arg:
            self._search(arg.split(" "), page_num=1)
        elif name == "click" and arg is not None and arg != "search" and arg in self._clickables:
            self._click(self._clickables[arg])
        else:
            return StepResult(self.observation, 0.0, False)
        obs = self._render()
        if s.page == "done":
            return StepResult(obs, s.reward, True,
                              {"reward_info": s.reward_info, "asin": s.asin, "options": dict(s.options)})
        return StepResult(obs, 0.0, False)

    def admissible_actions(self) -> list[str]:
        """The clickables of the current page as `click[...]` actions, in page order.
        `search[...]` is accepted on every page and is not listed."""
        return [f"click[{c.text}]" for c in self._clickables.values()]

    def close(self) -> None:
        """Nothing to release: the catalog and the search index are shared."""

    # ------------------------------------------------------------------ state changes

    def _search(self, keywords: list[str], page_num: int) -> None:
        s = self.session
        if keywords != s.keywords or not s.results:
            s.results = self.engine.search(keywords)
        s.page, s.keywords, s.page_num = "results", keywords, page_num
        s.asin, s.options, s.sub_page = None, {}, None

    def _click(self, c: _Clickable) -> None:
        s = self.session
        text = c.text
        if c.kind == "product":
            s.page, s.asin, s.sub_page = "item", text.upper(), None
        elif c.kind == "option":
            assert c.option_name is not None
            s.options[c.option_name] = text
            s.page = "item"
        elif text == END_BUTTON:
            self._buy()
        elif text == BACK_TO_SEARCH:
            self.session = _Session()
        elif text == NEXT_PAGE and s.page == "results":
            assert s.keywords is not None
            self._search(s.keywords, s.page_num + 1)
        elif text == PREV_PAGE and s.page == "results":
            assert s.keywords is not None
            self._search(s.keywords, s.page_num - 1)
        elif text == PREV_PAGE and s.page == "item":
            assert s.keywords is not None
            self._search(s.keywords, s.page_num)
        elif text == PREV_PAGE and s.page == "sub":
            s.page, s.sub_page = "item", None
        elif text in SUB_PAGES:
            s.page, s.sub_page = "sub", text

    def _buy(self) -> None:
        s = self.session
        assert s.asin is not None
        product = self.catalog.by_asin[s.asin]
        s.reward, s.reward_info = get_reward_info(product, self.goal, self.catalog.prices[s.asin],
                                                  s.options)
        s.page = "done"

    # ------------------------------------------------------------------ rendering

    @property
    def observation(self) -> str:
        return self._render()

    def _render(self) -> str:
        """The page as WebShop's text mode shows it; also records the page's clickables."""
        s = self.session
        instruction = self.goal["instruction_text"]
        parts: list[str] = []
        clickables: list[_Clickable] = []

        def button(text: str) -> None:
            parts.append(text)
            clickables.append(_Clickable("button", text))

        if s.page == "search":
            parts += ["WebShop", "Instruction:", instruction, "Search"]
        elif s.page == "results":
            parts += ["Instruction:", instruction]
            button(BACK_TO_SEARCH)
            parts.append(f"Page {s.page_num} (Total results: {len(s.results)})")
            if s.page_num > 1:
                button(PREV_PAGE)
            if s.page_num * PRODUCT_WINDOW < len(s.results):
                button(NEXT_PAGE)
            start = (s.page_num - 1) * PRODUCT_WINDOW
            for p in s.results[start:start + PRODUCT_WINDOW]:
                parts.append(p["asin"])
                clickables.append(_Clickable("product", p["asin"]))
                parts += [p["Title"], p["Price"]]
        elif s.page == "item":
            assert s.asin is not None
            p = self.catalog.by_asin[s.asin]
            parts += ["Instruction:", instruction]
            button(BACK_TO_SEARCH)
            button(PREV_PAGE)
            for name, values in p["options"].items():
                parts.append(name)
                for value in values:
                    parts.append(value)
                    clickables.append(_Clickable("option", value, name))
            parts += [p["Title"], f"Price: {p['Price']}", f"Rating: {p['Rating']}"]
            for text in (*SUB_PAGES, END_BUTTON):
                button(text)
        elif s.page == "sub":
            assert s.asin is not None and s.sub_page is not None
            p = self.catalog.by_asin[s.asin]
            parts += ["Instruction:", instruction]
            button(BACK_TO_SEARCH)
            button(PREV_PAGE)
            parts += _sub_page_texts(p, s.sub_page)
        else:
            parts += ["Thank you for shopping with us!", "Your code:",
                      "(Paste it in your MTurk interface.)", "Purchased", "asin", str(s.asin),
                      "options", json.dumps(s.options), "Your score (min 0.0, max 1.0)",
                      str(s.reward)]
        # Later clickables with the same text win, as in WebShop's text_to_clickable dict.
        self._clickables = {}
        for c in clickables:
            self._clickables.pop(c.text.lower(), None)
            self._clickables[c.text.lower()] = c
        return SEP.join(t.strip() for t in parts if t.strip())


def _sub_page_texts(p: Product, sub_page: str) -> list[str]:
    if sub_page == "Description":
        return [p["Description"]]
    if sub_page == "Features":
        return list(p["BulletPoints"]) or ["No Features"]
    texts: list[str] = []
    for r in p["Reviews"]:
        texts += [f'"{r.get("title", "")}"', str(r["score"]), r["body"]]
    return texts or ["No reviews found"]


# ---------------------------------------------------------------------- official environment

OFFICIAL_FIX = ("install WebShop (github.com/princeton-nlp/WebShop): clone it, run `./setup.sh -d all` "
                "to fetch its product data and build its search index, and `pip install -e .` it "
                "into this environment; or use the task's default source='offline'")


@cache
def official_server() -> Any:
    """WebShop's SimServer with all products and human goals (loaded once: minutes, GBs)."""
    try:
        from web_agent_site.envs.web_agent_text_env import SimServer
        from web_agent_site.utils import DEFAULT_FILE_PATH
    except ImportError as exc:
        raise A2RLError(f"source='official' needs WebShop's `web_agent_site` package, which is not "
                        f"importable here ({exc})", OFFICIAL_FIX) from exc
    try:
        return SimServer("http://127.0.0.1:3000", DEFAULT_FILE_PATH, filter_goals=None,
                         limit_goals=-1, num_products=None, human_goals=True, show_attrs=False)
    except (OSError, RuntimeError) as exc:  # missing data files or search index
        raise A2RLError(f"WebShop is installed but its data or search index is missing: {exc}",
                        OFFICIAL_FIX) from exc


class OfficialWebShopEnv:
    """The official `WebAgentTextEnv(observation_mode="text")` on human goal `goal_index`; the
    purchase is scored by `reward.get_reward_info`, as on the offline catalog."""

    def __init__(self, goal_index: int) -> None:
        server = official_server()
        from web_agent_site.envs.web_agent_text_env import WebAgentTextEnv

        self.goal_index = goal_index
        self._env = WebAgentTextEnv(observation_mode="text", server=server)

    def reset(self) -> str:
        obs, _ = self._env.reset(session=self.goal_index)
        return str(obs)

    def step(self, action: str) -> StepResult:
        obs, webshop_reward, done, _ = self._env.step(action)
        if not done:
            return StepResult(str(obs), 0.0, False)
        # The purchase is scored by a2rl's reward (the one the offline catalog uses), not by the
        # installed WebShop's: one scorer for both sources, whatever WebShop commit is installed.
        reward, info = self.score_purchase()
        info["webshop_reward"] = float(webshop_reward)
        return StepResult(str(obs), reward, True, {"reward_info": info})

    def score_purchase(self) -> tuple[float, dict[str, Any]]:
        """a2rl's reward for what this episode's session bought (goal, product, price, options
        as WebShop's server recorded them)."""
        server = self._env.server
        session = server.user_sessions[self._env.session]
        asin = session["asin"]
        return get_reward_info(server.product_item_dict[asin], session["goal"],
                               server.product_prices.get(asin), dict(session["options"]))

    def admissible_actions(self) -> list[str]:
        available = self._env.get_available_actions()
        return [f"click[{c}]" for c in available["clickables"] if c != "search"]

    def close(self) -> None:
        self._env.close()
