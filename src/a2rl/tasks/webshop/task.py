"""`webshop` (L3, interactive): buy the product an instruction asks for in a simulated web shop.

WebShop (Yao et al., 2022) as a text environment: the model searches (`search[keywords]`), opens
products and picks their options (`click[text]`) and buys (`click[Buy Now]`); the purchase gets
WebShop's dense reward, 0 to 1 (product type, attributes, options, price), exactly as WebShop's
master `goal.py` computes it (reward.py; recorded comparison in tests/tasks/test_webshop_master.py).
The score is 100 × the mean reward over the held-out goals; the success rate (reward 1) is
reported too. Both sources score a purchase with that one reward function.

Two sources:
- `offline` (default): a small catalog shipped with a2rl (300 products in WebShop's five
  categories, WebShop's data formats, made by webshop/make_data.py), a faithful simulator
  of WebShop's text env with BM25 search, and a port of WebShop's reward. Train goals are shipped
  (drawn once by make_data.py from a public seed, before and without any held-out seed), and
  held-out goals are drawn at run time by the same generator from a per-installation secret seed
  kept under $A2RL_HOME (a2rl._secrets), skipping train goals. The two draws are independent: the
  train goals cover 600 of the 29,117 possible goals, so what is missing from them (the gap)
  says nothing about which 100 are held out (tests/tasks/test_webshop_heldout.py tries that attack).
- `official`: WebShop's own `web_agent_site` text env with its 1.18 M products and 12 087 human
  goals, as used by the paper; needs WebShop installed with its data (a large download). Held-out
  goals are drawn from WebShop's test goals (indices 0–499), train episodes are its train goals
  (1500 onward).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from a2rl._secrets import installation_seed
from a2rl.envs import Env, Episode, RolloutConfig, Trajectory, run_rollouts
from a2rl.inference import GenerationSettings, ProgressFn
from a2rl.tasks._core.interactive import InteractiveTask
from a2rl.tasks._core.registry import tasks
from a2rl.tasks._core.task import TaskParams, secret_field
from a2rl.tasks.webshop.catalog import (
    PRODUCT_WINDOW,
    SEARCH_RETURN_N,
    Goal,
    generate_goals,
    load_catalog,
    load_train_goals,
)
from a2rl.tasks.webshop.env import SEP, OfficialWebShopEnv, WebShopTextEnv
from a2rl.tasks.webshop.reward import REFERENCE, noun_source

DEMOS_FILE = "demos.jsonl"
OFFICIAL_TEST_GOALS = range(0, 500)
"""WebShop's test split of the (shuffled) human goals; 500–1499 is its dev split."""
OFFICIAL_TRAIN_GOALS = range(1500, 12087)
"""WebShop's train split of its 12 087 human goals."""

MAX_STEPS = 15
HISTORY_WINDOW = 3

PREAMBLE = f"""You are shopping on WebShop. Buy the product that best matches the instruction: its \
kind, attributes, options (size, color, ...) and price.
Each page is shown as text fields separated by [SEP]. Reply with exactly one action and nothing else:
search[keywords] searches the shop, e.g. search[gluten free dark chocolate bar]
click[text] clicks a button, a product ID or an option exactly as shown, e.g. click[B0ABC12345], \
click[Next >], click[< Prev], click[Back to Search], click[Features], click[x-large], click[Buy Now]
On a product page, click each option the instruction asks for, then click[Buy Now]. You have at most \
{MAX_STEPS} actions."""

_ACTION = re.compile(r"\b(search|click)\s*\[([^\[\]\n]*)\]", re.IGNORECASE)


class WebShopParams(TaskParams):
    source: Literal["offline", "official"] = "offline"
    """`offline`: the shipped catalog and simulator; `official`: WebShop's own env (installed
    separately with its data)."""
    n_heldout: int = Field(100, ge=1)
    """Held-out goals (the evaluation set)."""
    max_heldout: int | None = Field(None, ge=1)
    """Evaluate only the first N held-out goals (quick checks); None = all."""
    heldout_seed: int | None = secret_field()
    """Seed of the held-out selection; None = this installation's secret seed."""
    n_train: int | None = Field(None, ge=1)
    """Train-visible episodes written to data/episodes.jsonl; None = all."""
    n_demos: int = Field(8, ge=0, le=50)
    """Demonstration trajectories written to data/demos.jsonl."""

    @model_validator(mode="after")
    def _official_has_500_test_goals(self) -> WebShopParams:
        if self.source == "official" and self.n_heldout > len(OFFICIAL_TEST_GOALS):
            raise ValueError(f"the official test split has {len(OFFICIAL_TEST_GOALS)} goals")
        return self


@tasks.register("webshop")
class WebShopTask(InteractiveTask):
    name = "webshop"
    level = "L3"
    reward_kind = "interactive"
    version = "2"
    """2: the reward follows WebShop's master goal.py (fuzzy options for every kind, goal options
    only, spaCy title nouns); 1 followed an unmerged WebShop commit."""
    audit_patterns = (r"goal\[['\"]asin['\"]\]", r"\bgoal_asin\b", r"human_goals", r"get_reward\(")
    Params = WebShopParams
    params: WebShopParams
    rollout: ClassVar[RolloutConfig] = RolloutConfig(
        generation=GenerationSettings(max_new_tokens=48, stop=("\n",)),
        max_steps=MAX_STEPS, history_window=HISTORY_WINDOW)
    rollout_batch_size: ClassVar[int] = 16

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        if self.params.heldout_seed is None:
            self.params.heldout_seed = installation_seed("webshop-heldout-seed")

    # ------------------------------------------------------------------ episodes

    def train_episodes(self) -> list[Episode]:
        n = self.params.n_train
        if self.params.source == "official":
            return [Episode(id=f"train-{i:05d}", split="train", payload={"goal_index": i})
                    for i in list(OFFICIAL_TRAIN_GOALS)[:n]]
        return [Episode(id=f"train-{i:04d}", split="train", payload={"goal": g})
                for i, g in enumerate(load_train_goals()[:n])]

    def heldout_episodes(self) -> list[Episode]:
        return self._heldout[:self.params.max_heldout]

    @cached_property
    def _heldout(self) -> list[Episode]:
        seed = self.params.heldout_seed
        assert seed is not None
        if self.params.source == "official":
            picked = sorted(random.Random(seed).sample(OFFICIAL_TEST_GOALS, self.params.n_heldout))
            return [Episode(id=f"heldout-{i:03d}", split="heldout", payload={"goal_index": i})
                    for i in picked]
        goals = generate_goals(load_catalog(), seed, self.params.n_heldout,
                               exclude=load_train_goals())
        return [Episode(id=f"heldout-{i:03d}", split="heldout", payload={"goal": g})
                for i, g in enumerate(goals)]

    def make_env(self, episode: Episode) -> Env:
        if "goal_index" in episode.payload:
            return OfficialWebShopEnv(int(episode.payload["goal_index"]))
        return WebShopTextEnv(episode.payload["goal"])

    # ------------------------------------------------------------------ prompt and actions

    degenerate_actions: ClassVar[tuple[str, ...]] = (
        "click[buy now]", "search[product]", "click[< prev]", "click[next >]")

    def messages(self, episode: Episode, history: list[dict[str, str]]) -> list[dict[str, str]]:
        """The rules go into the first user turn (no system turn: not every chat template has
        one), followed by the observations and the model's actions."""
        first, *rest = history
        return [{"role": "user", "content": f"{PREAMBLE}\n\n{first['content']}"}, *rest]

    def parse_action(self, completion: str) -> str | None:
        """The first `search[...]` or `click[...]` anywhere in the completion, normalised to
        lower-case verb and trimmed argument; None when there is none."""
        m = _ACTION.search(completion)
        return f"{m[1].lower()}[{m[2].strip()}]" if m else None

    def scorer(self) -> str:
        """What the score is, in words (description, records)."""
        return (f"100 × mean WebShop purchase reward, reproducing {REFERENCE} "
                f"(title nouns: {noun_source()})")

    def score_of(self, mean_reward: float, success_rate: float) -> float:
        """WebShop's score is the mean reward (dense), not the success rate."""
        return mean_reward

    # ------------------------------------------------------------------ train data

    def write_train_data(self, data_dir: Path) -> list[Path]:
        files = super().write_train_data(data_dir)
        if self.params.n_demos:
            path = data_dir / DEMOS_FILE
            path.write_text("".join(t.model_dump_json() + "\n"
                                    for t in self.demo_trajectories(self.params.n_demos)))
            files.append(path)
        return files

    def demo_trajectories(self, n: int) -> list[Trajectory]:
        """`n` successful human-style demonstrations on offline train goals, produced by a
        scripted shopper through the evaluator's own rollout code (so the prompt and action
        format are exactly the evaluation's): search for an attribute and the product kind, page
        through the results to the product, sometimes read its features, pick each option, buy."""
        goals = load_train_goals()[:max(3 * n, n + 10)]
        episodes = [Episode(id=f"train-{i:04d}", split="train", payload={"goal": g})
                    for i, g in enumerate(goals)]
        engine = _ScriptedShopper(goals)
        trajectories = run_rollouts(engine, episodes, lambda ep: WebShopTextEnv(ep.payload["goal"]),
                                    self.messages, self.parse_action, self.finish, self.rollout,
                                    task=self.name)
        return [t for t in trajectories if t.success][:n]

    # ------------------------------------------------------------------ description

    def description(self, *, chat_preview: Callable[[list[dict[str, str]]], str] | None) -> str:
        example = self.train_episodes()[0]
        official = self.params.source == "official"
        first_obs = ("WebShop [SEP] Instruction: [SEP] <instruction> [SEP] Search" if official
                     else WebShopTextEnv(example.payload["goal"]).reset())
        msgs = self.messages(example, [{"role": "user", "content": first_obs}])
        rendered = chat_preview(msgs) if chat_preview else json.dumps(msgs, indent=1)
        g = self.rollout.generation
        n_eval = min(self.params.n_heldout, self.params.max_heldout or self.params.n_heldout)
        n_train = len(self.train_episodes())
        split = " from WebShop's test split (goals 0–499)" if official else ""
        source = (
            "WebShop's official text environment (`web_agent_site`: 1.18 M products, 12 087 human\n"
            "goals, Lucene search), as used in the paper." if official else
            "an offline WebShop: 300 products in WebShop's five categories\n"
            "(beauty, food, fashion, furniture, electronics; 30 product kinds, 10 products each that\n"
            "differ in brand, attributes, options and price), a simulator of WebShop's text\n"
            "environment with BM25 search, and a port of WebShop's reward. The paper used the\n"
            "official WebShop environment (task option source=official), which needs a large\n"
            "separate download.")
        payload = (
            "`payload.goal_index` is the number of\n  the official env's goal." if official else
            "`payload.goal` is the goal in WebShop's\n  format: `asin` (the product the instruction "
            "was written for), `instruction_text`,\n  `attributes`, `goal_options`, `price_upper`, "
            "`query`, `name`, `category`, `product_category`.")
        return self.render_template(
            source=source, n_train=n_train, payload=payload, demos_file=DEMOS_FILE,
            n_demos=self.params.n_demos, history_window=HISTORY_WINDOW,
            product_window=PRODUCT_WINDOW, search_return_n=SEARCH_RETURN_N, n_eval=n_eval,
            split=split, rendered=rendered, max_new_tokens=g.max_new_tokens, max_steps=MAX_STEPS,
            reference=REFERENCE, noun_source=noun_source())


class _ScriptedShopper:
    """A rollout engine that shops like a careful person who knows the goal: it reads the page in
    the prompt (JSON-encoded messages) and answers one action."""

    backend = "scripted"

    def __init__(self, goals: Sequence[Goal]) -> None:
        self.goals = {g["instruction_text"]: (i, g) for i, g in enumerate(goals)}
        self.state: dict[str, dict[str, Any]] = {}

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str:
        return json.dumps(messages)

    def generate(self, prompts: Sequence[str], settings: GenerationSettings,
                 on_progress: ProgressFn | None = None) -> list[str]:
        return [self._act(json.loads(p)[-1]["content"].rsplit("\n\n", 1)[-1]) for p in prompts]

    def _act(self, page: str) -> str:
        fields = page.split(SEP)
        instruction = fields[fields.index("Instruction:") + 1]
        index, goal = self.goals[instruction]
        st = self.state.setdefault(instruction, {"features": index % 2 == 1, "clicked": []})
        if fields[0] == "WebShop":
            return f"search[{goal['attributes'][0]} {goal['query']}]"
        if any(f.startswith("Page ") and "(Total results:" in f for f in fields):
            if goal["asin"] in fields:
                return f"click[{goal['asin']}]"
            return "click[Next >]" if "Next >" in fields else "click[Back to Search]"
        if "Buy Now" not in fields:  # a Description/Features/Reviews page
            return "click[< Prev]"
        if st["features"]:
            st["features"] = False
            return "click[Features]"
        for option in goal["goal_options"]:
            if option not in st["clicked"]:
                st["clicked"].append(option)
                return f"click[{option}]"
        return "click[Buy Now]"

    def close(self) -> None: ...
