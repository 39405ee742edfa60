"""The official source scores a purchase with a2rl's reward, as the offline source does.

WebShop itself (1.18 M products, a Java search index) cannot be installed here, so a stand-in
`web_agent_site` with WebShop's interface (SimServer sessions, WebAgentTextEnv.reset/step) plays
the server; its own reward is deliberately wrong, to show which one the episode gets.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from a2rl.tasks.webshop import env as webshop_env
from a2rl.tasks.webshop.catalog import load_catalog
from a2rl.tasks.webshop.env import OfficialWebShopEnv, WebShopTextEnv
from a2rl.tasks.webshop.reward import get_reward_info

WRONG_REWARD = 0.123


class FakeServer:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        catalog = load_catalog()
        self.product_item_dict = catalog.by_asin
        self.product_prices = catalog.prices
        self.goals: list[dict[str, Any]] = []
        self.user_sessions: dict[str, dict[str, Any]] = {}


class FakeTextEnv:
    """WebShop's text env reduced to what OfficialWebShopEnv uses: search, open, choose, buy."""

    def __init__(self, observation_mode: str, server: FakeServer) -> None:
        self.server = server
        self.session = ""

    def reset(self, session: int) -> tuple[str, None]:
        self.session = str(session)
        goal = self.server.goals[session]
        self.server.user_sessions[self.session] = {"goal": goal, "asin": None, "options": {}}
        return f"WebShop [SEP] Instruction: [SEP] {goal['instruction_text']} [SEP] Search", None

    def step(self, action: str) -> tuple[str, float, bool, None]:
        s = self.server.user_sessions[self.session]
        arg = action[action.index("[") + 1:-1]
        if action.startswith("click[") and arg.upper() in self.server.product_item_dict:
            s["asin"] = arg.upper()
        elif action == "click[Buy Now]":
            return "Thank you for shopping with us!", WRONG_REWARD, True, None
        elif action.startswith("click["):
            product = self.server.product_item_dict[s["asin"]]
            name = next(n for n, values in product["options"].items() if arg in values)
            s["options"][name] = arg
        return "page", 0.0, False, None

    def get_available_actions(self) -> dict[str, Any]:
        return {"has_search_bar": True, "clickables": ["search"]}

    def close(self) -> None: ...


@pytest.fixture
def fake_webshop(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    root = types.ModuleType("web_agent_site")
    envs = types.ModuleType("web_agent_site.envs")
    text_env = types.ModuleType("web_agent_site.envs.web_agent_text_env")
    utils = types.ModuleType("web_agent_site.utils")
    text_env.SimServer = FakeServer  # type: ignore[attr-defined]
    text_env.WebAgentTextEnv = FakeTextEnv  # type: ignore[attr-defined]
    utils.DEFAULT_FILE_PATH = "/nonexistent"  # type: ignore[attr-defined]
    modules = {"web_agent_site": root, "web_agent_site.envs": envs,
               "web_agent_site.envs.web_agent_text_env": text_env, "web_agent_site.utils": utils}
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    webshop_env.official_server.cache_clear()
    yield webshop_env.official_server()
    webshop_env.official_server.cache_clear()


def test_official_and_offline_score_the_same_purchase_the_same(fake_webshop: FakeServer) -> None:
    catalog = load_catalog()
    products = [p for p in catalog.products if len(p["options"]) == 2][:6]
    for i, p in enumerate(products):
        names = list(p["options"])
        goal = {"asin": p["asin"], "category": p["category"], "query": p["query"], "name": p["name"],
                "product_category": p["product_category"], "instruction_text": f"goal {i}",
                "attributes": p["Attributes"][:2], "price_upper": 1000000.0 if i % 2 else 10.0,
                "goal_options": [p["options"][names[0]][0], p["options"][names[1]][-1]]}
        fake_webshop.goals.append(goal)
        chosen = [p["options"][names[0]][0], p["options"][names[1]][i % 2]]  # right, then maybe wrong

        official = OfficialWebShopEnv(i)
        official.reset()
        official.step(f"click[{p['asin']}]")
        for value in chosen:
            official.step(f"click[{value}]")
        got = official.step("click[Buy Now]")

        offline = WebShopTextEnv(goal)
        offline.reset()
        offline.step(f"search[{p['Title']}]")
        offline.step(f"click[{p['asin']}]")
        for value in chosen:
            offline.step(f"click[{value}]")
        want = offline.step("click[Buy Now]")

        assert got.done and want.done
        expected = get_reward_info(p, goal, catalog.prices[p["asin"]], dict(zip(names, chosen, strict=True)))
        assert want.reward == got.reward == expected[0] != WRONG_REWARD
        info = dict(got.info["reward_info"])
        assert info.pop("webshop_reward") == WRONG_REWARD
        assert info == want.info["reward_info"] == expected[1]
