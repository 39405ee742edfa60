"""WebShop's held-out goals cannot be inferred from what an agent is given (issue 17, class 2).

The attack that recovered 99 of arith's 200 held-out questions: enumerate the item space, remove
the train items, and read the test set off the gap. For the offline WebShop, the train goals are
drawn once from a public seed (shipped) and the held-out goals at run time from a secret seed
under $A2RL_HOME, skipping train goals; the train side never sees the held-out seed. These tests
play the attacker with everything a2rl ships.
"""

from __future__ import annotations

import itertools
import random
from math import comb, prod
from pathlib import Path

from a2rl._paths import a2rl_home
from a2rl.tasks.webshop.catalog import goal_key, load_catalog, load_train_goals
from a2rl.tasks.webshop.task import WebShopTask

Key = tuple[str, tuple[str, ...], tuple[str, ...]]
SEEDS = (11, 222, 3333, 44444, 555555)
GUESSES = 200


def goal_space() -> dict[Key, float]:
    """Every goal the offline generator can draw (by goal_key), with its probability per draw:
    a uniform product, 1, 2, 2 or 3 attributes as a uniform subset, one uniform value per option."""
    products = [p for p in load_catalog().products if p["Attributes"] != ["DUMMY_ATTR"]]
    space: dict[Key, float] = {}
    for p in products:
        attrs, options = p["Attributes"], [sorted(set(v)) for v in p["options"].values() if v]
        p_options = 1 / prod(len(v) for v in options)
        for k, p_k in ((1, 0.25), (2, 0.5), (3, 0.25)):
            k = min(k, len(attrs))
            for subset in itertools.combinations(sorted(attrs), k):
                for values in itertools.product(*options):
                    key = (p["asin"], subset, tuple(sorted(values)))
                    space[key] = space.get(key, 0.0) + p_k / comb(len(attrs), k) * p_options / len(products)
    return space


def heldout_keys(seed: int) -> set[Key]:
    task = WebShopTask({"heldout_seed": seed})
    return {goal_key(e.payload["goal"]) for e in task.heldout_episodes()}


def test_train_data_do_not_depend_on_the_heldout_seed(tmp_path: Path) -> None:
    written = []
    for seed in SEEDS[:2]:
        out = tmp_path / str(seed)
        out.mkdir()
        task = WebShopTask({"heldout_seed": seed, "n_demos": 2})
        files = task.write_train_data(out)
        written.append({f.name: f.read_bytes() for f in files})
        assert task.train_episodes() == WebShopTask({"heldout_seed": SEEDS[-1]}).train_episodes()
    assert written[0] == written[1]
    assert heldout_keys(SEEDS[0]) != heldout_keys(SEEDS[1])


def test_the_gap_attack_recovers_no_more_than_guessing() -> None:
    """The gap (all goals minus the train goals) is 285 times the held-out set. An attacker who
    guesses 200 goals from it, even the ones the generator draws most often, recovers what the
    generator's public distribution predicts (arith's leak: 99 of 200); knowing the train goals
    only saves it the guesses a blind attacker spends on them."""
    space = goal_space()
    train = {goal_key(g) for g in load_train_goals()}
    assert train <= set(space)
    gap = [k for k in space if k not in train]
    assert len(space) == 29117 and len(gap) >= 280 * 100
    train_mass = sum(space[k] for k in train)

    def expected_hits(guesses: list[Key]) -> float:
        """Expected held-out goals among `guesses` (100 draws from the generator, train skipped)."""
        return sum(1 - (1 - space[k] / (1 - train_mass)) ** 100 for k in guesses if k not in train)

    by_probability = sorted(space, key=lambda k: -space[k])
    strategies = {
        "gap in catalog order": gap[:GUESSES],
        "most likely goals in the gap": [k for k in by_probability if k not in train][:GUESSES],
        "random goals from the gap": random.Random(0).sample(gap, GUESSES),
    }
    blind = by_probability[:GUESSES]  # the most likely goals, train goals not removed
    for seed in SEEDS:
        held = heldout_keys(seed)
        assert len(held) == 100 and held <= set(gap)
        for name, guesses in strategies.items():
            hits, mean = len(held & set(guesses)), expected_hits(guesses)
            assert hits <= mean + 3 * mean ** 0.5 + 3, (seed, name, hits, mean)
            assert hits <= 15, (seed, name, hits)
        gain = len(held & set(strategies["most likely goals in the gap"])) - len(held & set(blind))
        assert gain <= 5, (seed, gain)


def test_train_and_heldout_draws_are_independent() -> None:
    """The held-out draw is the generator's draw from the secret seed, with train goals (and
    repeats) skipped: the same goals as drawing from the seed alone, in the same order."""
    from a2rl.tasks.webshop.catalog import generate_goals

    catalog = load_catalog()
    train = {goal_key(g) for g in load_train_goals()}
    for seed in SEEDS[:2]:
        held = [goal_key(e.payload["goal"]) for e in WebShopTask({"heldout_seed": seed}).heldout_episodes()]
        free = [goal_key(g) for g in generate_goals(catalog, seed, 200)]
        assert held == [k for k in free if k not in train][:100]


def test_heldout_seed_lives_under_a2rl_home_not_in_the_workspace(tmp_path: Path) -> None:
    task = WebShopTask()
    seed = task.params.heldout_seed
    assert seed is not None
    seed_files = [p for p in a2rl_home().rglob("*") if p.is_file() and p.read_text().strip() == str(seed)]
    assert [p.name for p in seed_files] == ["webshop-heldout-seed"]
    files = task.write_train_data(tmp_path)
    assert files and all(str(seed) not in f.read_text() for f in files)
    assert str(seed) not in task.description(chat_preview=None)
