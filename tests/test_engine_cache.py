"""The transformers engine's per-session KV caches: same completions as re-encoding every
prompt, with most prompt tokens taken from a cache."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from a2rl._errors import A2RLError
from a2rl.envs import Episode, RolloutConfig, Step, StepResult, run_rollouts
from a2rl.inference import GenerationSettings, SessionPrompt, load_engine
from a2rl.inference._transformers import TransformersEngine


class Plain:
    """The engine without its session methods: every step re-encodes its whole prompt."""

    backend = "plain"

    def __init__(self, engine: TransformersEngine) -> None:
        self.engine = engine

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str:
        return self.engine.apply_chat_template(messages)

    def generate(self, prompts: Sequence[str], settings: GenerationSettings, on_progress=None):
        return self.engine.generate(prompts, settings)

    def close(self) -> None: ...


class EchoEnv:
    """Every action is accepted; the observation grows with the step, the episode ends after
    `length` steps (episodes of different lengths leave the batch at different rounds)."""

    def __init__(self, ep: Episode) -> None:
        self.n, self.length, self.word = 0, ep.payload["length"], ep.payload["word"]

    def reset(self) -> str:
        return f"Task {self.word}: say something about {self.word}."

    def step(self, action: str) -> StepResult:
        self.n += 1
        return StepResult(f"Noted ({self.n}). {self.word} again?" * (1 + self.n % 2), 0.0,
                          self.n >= self.length)

    def admissible_actions(self) -> None:
        return None

    def close(self) -> None: ...


def prompt(ep: Episode, history: list[dict[str, str]]) -> list[dict[str, str]]:
    # A long shared preamble, as the L3 tasks have (their rules and examples).
    rules = "Rules: answer in a few words. " * 12
    first, *rest = history
    return [{"role": "user", "content": rules + first["content"]}, *rest]


def parse(completion: str) -> str:
    return completion.strip() or "ok"


def finish(ep: Episode, env: EchoEnv, steps: list[Step]) -> tuple[float, bool]:
    return 0.0, False


EPISODES = [Episode(id=f"e{i}", split="train", payload={"length": n, "word": w})
            for i, (n, w) in enumerate([(3, "apples"), (1, "boats"), (4, "clouds"),
                                        (2, "doors"), (3, "eels")])]


@pytest.fixture(scope="module")
def engine(tiny_model: Path) -> TransformersEngine:
    eng = load_engine(tiny_model, backend="transformers")
    # The cached path is the default (A2RL_KV_SESSIONS=0 turns it off).
    assert isinstance(eng, TransformersEngine) and eng._caching
    return eng


def completions(trajs) -> list[list[str]]:
    return [[s.completion for s in t.steps] for t in trajs]


@pytest.mark.parametrize("window", [None, 2])
def test_cached_rollouts_equal_reencoding(engine: TransformersEngine, window: int | None) -> None:
    """Greedy: the cached engine's trajectories are the re-encoding engine's, whatever the
    batching (all in flight, two at a time with refills); most prompt tokens come from caches
    (own history, or the preamble another episode encoded), and ended episodes free theirs."""
    cfg = RolloutConfig(generation=GenerationSettings(max_new_tokens=5, stop=("\n",)),
                        max_steps=4, history_window=window)
    reference = run_rollouts(Plain(engine), EPISODES, EchoEnv, prompt, parse, finish, cfg,
                             task="t")
    engine.cache_stats.update(prompt_tokens=0, encoded_tokens=0)
    cached = run_rollouts(engine, EPISODES, EchoEnv, prompt, parse, finish, cfg, task="t")
    stats = dict(engine.cache_stats)
    pooled = run_rollouts(engine, EPISODES, EchoEnv, prompt, parse, finish, cfg, task="t",
                          batch_size=2)
    assert completions(cached) == completions(reference) == completions(pooled)
    assert [len(t.steps) for t in cached] == [3, 1, 4, 2, 3]
    assert [t.model_dump() for t in cached] == [t.model_dump() for t in reference]
    # Without a window nearly everything is reused; with one, the slid history is re-encoded.
    assert stats["encoded_tokens"] < (0.35 if window is None else 0.6) * stats["prompt_tokens"]
    assert engine._sessions == {}


def test_sessions_api(engine: TransformersEngine) -> None:
    settings = GenerationSettings(max_new_tokens=4)
    shared = engine.apply_chat_template([{"role": "user", "content": "Shared rules. " * 20}])
    prompts = [shared + "one", shared + "two two"]
    engine.cache_stats.update(prompt_tokens=0, encoded_tokens=0)
    got = engine.generate_sessions([SessionPrompt("a", prompts[0]), SessionPrompt("b", prompts[1])],
                                   settings)
    assert got == engine.generate(prompts, settings)
    # The second prompt's shared prefix came from the first session's cache.
    assert engine.cache_stats["encoded_tokens"] < 0.7 * engine.cache_stats["prompt_tokens"]
    # A turn that rewrites earlier text (diverging inside the cached part) is still right.
    turn = prompts[1][:-3] + "three" + got[1]
    assert engine.generate_sessions([SessionPrompt("b", turn)], settings) == \
        engine.generate([turn], settings)
    # A one-token prompt (nothing to cache before its last token) batches with a cached one.
    assert len(engine.tokenizer("hi", add_special_tokens=False)["input_ids"]) == 1
    pair = [SessionPrompt("c", "hi"), SessionPrompt("a", prompts[0] + got[0] + " more")]
    assert engine.generate_sessions(pair, settings) == \
        engine.generate([r.prompt for r in pair], settings)
    with pytest.raises(A2RLError, match="two turns of one session"):
        engine.generate_sessions([SessionPrompt("a", prompts[0])] * 2, settings)
    for key in ("a", "b", "c", "never-started"):
        engine.end_session(key)
    assert engine._sessions == {}


def test_rows_with_many_new_tokens_are_encoded_alone() -> None:
    """The fused forward pads every row to its longest one; a row far longer than the rest is
    prefilled alone, rows of similar length stay together."""
    alone = TransformersEngine._encode_alone
    assert alone([1, 1, 1, 500]) == [3]
    assert alone([12, 10, 11, 12]) == []
    assert alone([1, 900, 2, 800, 3]) == [1, 3]
    assert alone([]) == [] and alone([700]) == []


def test_a_long_turn_in_a_batch_of_short_ones_is_still_exact(
        engine: TransformersEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    """One session with a long new turn beside sessions adding a few tokens: it is encoded alone
    (one extra prefill) and every completion is the re-encoding engine's."""
    settings = GenerationSettings(max_new_tokens=4)
    heads = [engine.apply_chat_template([{"role": "user", "content": f"Note {w}."}])
             for w in ("one", "two", "three")]
    engine.generate_sessions([SessionPrompt(f"s{i}", h) for i, h in enumerate(heads)], settings)
    long_turn = " ".join(f"word{i}" for i in range(150))
    turns = [heads[0] + " yes", heads[1] + " " + long_turn, heads[2] + " no"]
    calls: list[int] = []
    original = engine._prefill
    monkeypatch.setattr(engine, "_prefill",
                        lambda tokens, kv, n: calls.append(len(tokens) - n) or original(tokens, kv, n))
    got = engine.generate_sessions([SessionPrompt(f"s{i}", t) for i, t in enumerate(turns)], settings)
    assert len(calls) == 1 and calls[0] > 100
    assert got == engine.generate(turns, settings)
    for i in range(3):
        engine.end_session(f"s{i}")


def test_kv_sessions_can_be_turned_off(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A2RL_KV_SESSIONS=0 gives the previous engine (every turn re-encodes its whole prompt),
    for comparisons."""
    monkeypatch.setenv("A2RL_KV_SESSIONS", "0")
    eng = load_engine(tiny_model, backend="transformers")
    assert isinstance(eng, TransformersEngine) and not eng._caching
    settings = GenerationSettings(max_new_tokens=3)
    prompt = eng.apply_chat_template([{"role": "user", "content": "Say one word."}])
    assert eng.generate_sessions([SessionPrompt("s", prompt)], settings) == \
        eng.generate([prompt], settings)
    assert eng._sessions == {} and eng.cache_stats["prompt_tokens"] == 0
