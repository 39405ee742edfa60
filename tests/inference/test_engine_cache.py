"""The transformers engine's per-session KV caches: same completions as re-encoding every
prompt, with most prompt tokens taken from a cache."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import pytest

from a2rl._errors import A2RLError
from a2rl.envs import Episode, RolloutConfig, Step, StepResult, run_rollouts
from a2rl.inference import GenerationSettings, SessionPrompt, load_engine
from a2rl.inference.engines.transformers import TransformersEngine

COMPARISON = Path(__file__).resolve().parent.parent.parent / "bench" / "_comparison_engine.py"
"""The engine paths the benchmarks compare against (transformers' cache, attention, decoding)."""


def _comparison() -> ModuleType:
    """bench/_comparison_engine.py, imported by path (bench/ is not a package)."""
    name = "a2rl_bench_comparison_engine"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, COMPARISON)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


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
    # The cached path is the engine's (a full-attention model).
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


def test_comparison_engine_without_kv_sessions(tiny_model: Path) -> None:
    """The benchmarks' engine without session caches re-encodes every turn's whole prompt
    through `generate`."""
    eng = _comparison().ComparisonEngine(tiny_model, without=("kv-sessions",))
    assert isinstance(eng, TransformersEngine) and not eng._caching
    settings = GenerationSettings(max_new_tokens=3)
    prompt = eng.apply_chat_template([{"role": "user", "content": "Say one word."}])
    assert eng.generate_sessions([SessionPrompt("s", prompt)], settings) == \
        eng.generate([prompt], settings)
    assert eng._sessions == {} and eng.cache_stats["prompt_tokens"] == 0


def _decode_logits(model, cache, prompt_ids, steps: int):
    """Greedy decode `steps` tokens after `prompt_ids` with `cache`; the logits of each step."""
    import torch

    logits = []
    with torch.inference_mode():
        out = model(input_ids=prompt_ids, cache=cache, use_cache=True)
        for _ in range(steps):
            logits.append(out.logits[:, -1])
            out = model(input_ids=out.logits[:, -1:].argmax(-1), cache=cache, use_cache=True)
    return torch.stack(logits)


def test_growing_cache_is_bit_identical_to_concatenation(engine: TransformersEngine) -> None:
    """The preallocated cache hands attention views with the concatenated tensors' shapes and
    values: every logit is bit-identical, with and without a prefilled prefix, and the buffer
    is written in place (no reallocation within what was reserved)."""
    import torch
    from transformers import DynamicCache

    from a2rl.inference._kv_cache import GrowingLayer, growing_cache

    model = engine.model
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(10, 1000, (3, 40), generator=gen)
    want = _decode_logits(model, DynamicCache(config=model.config), ids, 12)
    cache = growing_cache(model.config, reserve=40 + 12)
    got = _decode_logits(model, cache, ids, 12)
    assert torch.equal(got, want)
    layer = cache.layers[0]
    assert isinstance(layer, GrowingLayer) and layer._buf_k.shape[2] == 52
    assert layer.keys.data_ptr() == layer._buf_k.data_ptr() and layer.keys.shape[2] == 52
    # Filled from a prefix (as the engine resumes a session), reserve too small: it grows.
    prefix = DynamicCache(config=model.config)
    with torch.inference_mode():
        model(input_ids=ids[:, :30], cache=prefix, use_cache=True)
    kv = [(lay.keys.clone(), lay.values.clone()) for lay in prefix.layers]
    want = _decode_logits(model, DynamicCache(ddp_cache_data=kv), ids[:, 30:], 9)
    small = growing_cache(model.config, kv, reserve=31)
    assert torch.equal(_decode_logits(model, small, ids[:, 30:], 9), want)
    # 30 cached + 10 fed + 9 decoded: past the 31 reserved, so the buffer grew (amortised).
    assert small.layers[0].keys.shape[2] == 49 and small.layers[0]._buf_k.shape[2] >= 49


def test_growing_layer_adopts_tensors_replaced_from_outside() -> None:
    """A crop or a batch reorder replaces `keys`/`values`; the next update starts from them."""
    import torch

    from a2rl.inference._kv_cache import GrowingLayer

    layer = GrowingLayer(reserve=8)
    k = torch.arange(2 * 1 * 5 * 2, dtype=torch.float32).reshape(2, 1, 5, 2)
    layer.update(k, -k)
    layer.crop(-2)  # keeps 3 columns (a view of the buffer, shorter than what is filled)
    keys, values = layer.update(k[:, :, :1], -k[:, :, :1])
    assert torch.equal(keys, torch.cat([k[:, :, :3], k[:, :, :1]], dim=2))
    assert torch.equal(values, -keys)
    layer.batch_select_indices(torch.tensor([1]))
    keys, _ = layer.update(k[1:, :, 4:], -k[1:, :, 4:])
    assert torch.equal(keys, torch.cat([k[1:, :, :3], k[1:, :, :1], k[1:, :, 4:]], dim=2))


def test_comparison_engine_without_growing_cache(tiny_model: Path) -> None:
    """The benchmarks' engine without the preallocated cache uses transformers' concatenating
    one; completions are the engine's."""
    from transformers.cache_utils import DynamicLayer

    settings = GenerationSettings(max_new_tokens=6)
    prompts = ["Say one word.", "Count to three, slowly and with care."]
    on = load_engine(tiny_model, backend="transformers")
    off = _comparison().ComparisonEngine(tiny_model, without=("growing-cache",))
    assert isinstance(off, TransformersEngine) and not off._growing
    assert type(off._new_cache(None, 10).layers[0]) is DynamicLayer
    assert on.generate(prompts, settings) == off.generate(prompts, settings)
    sessions = [SessionPrompt(str(i), p) for i, p in enumerate(prompts)]
    assert on.generate_sessions(sessions, settings) == off.generate_sessions(sessions, settings)



def test_comparison_engine_paths_give_the_engines_completions(
        engine: TransformersEngine, tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without compact decoding (`generate` decodes greedy turns), prompt lookup and copy-free
    attention the benchmarks' engine gives the engine's completions, turn after turn; the
    re-encoding wrapper generates with the concatenating cache and SDPA attention and leaves the
    engine as it was."""
    from a2rl.inference._attention import NAME
    from a2rl.inference.engines import transformers as transformers_engine

    comparison = _comparison()
    settings = GenerationSettings(max_new_tokens=8)
    prompts = [engine.apply_chat_template([{"role": "user", "content": f"Name {w} things."}])
               for w in ("two", "three or four")]
    first = [SessionPrompt(f"c{i}", p) for i, p in enumerate(prompts)]
    want = engine.generate_sessions(first, settings)
    for request in first:
        engine.end_session(request.session)
    off = comparison.ComparisonEngine(
        tiny_model, without=("compact-decode", "prompt-lookup", "packed-attention"))
    assert off._lookup == 0 and off.model.config._attn_implementation == "sdpa"

    def no_greedy_decode(*args, **kwargs):
        raise AssertionError("greedy_decode ran without compact decoding")

    monkeypatch.setattr(transformers_engine, "greedy_decode", no_greedy_decode)
    assert off.generate_sessions(first, settings) == want
    second = [SessionPrompt(r.session, r.prompt + w + " and more") for r, w in zip(first, want, strict=True)]
    assert off.generate_sessions(second, settings) == engine.generate([r.prompt for r in second],
                                                                      settings)
    assert off.cache_stats["encoded_tokens"] < off.cache_stats["prompt_tokens"]
    with pytest.raises(ValueError, match="unknown part"):
        comparison.ComparisonEngine(tiny_model, without=("kv-cache",))

    seen: list[tuple[bool, str]] = []
    reencoding = comparison.Reencoding(engine)
    got = reencoding.generate(prompts, settings, lambda n: seen.append(
        (engine._growing, engine.model.config._attn_implementation)))
    assert got == engine.generate(prompts, settings)
    assert seen == [(False, "sdpa")]
    assert engine._growing and engine.model.config._attn_implementation == NAME

def test_greedy_decode_drops_finished_rows_with_generates_tokens(engine: TransformersEngine) -> None:
    """Rows that stop at different steps leave the batch (the cache shrinks with them), and every
    row's tokens and its stopping point are `generate`'s; its cache covers all but its last token."""
    import torch
    from transformers import GenerationConfig

    from a2rl.inference._kv_cache import growing_cache

    model, tok = engine.model, engine.tokenizer
    gen = torch.Generator().manual_seed(3)
    rows, width = 6, 12
    ids = torch.randint(10, 1000, (rows, width), generator=gen)
    mask = torch.ones_like(ids)
    mask[1, :4] = 0  # left padding on two rows
    mask[4, :7] = 0
    ids[mask == 0] = tok.pad_token_id
    free = model.generate(input_ids=ids, attention_mask=mask, generation_config=GenerationConfig(
        max_new_tokens=10, do_sample=False, pad_token_id=tok.pad_token_id, eos_token_id=None))
    # Stop ids: the tokens rows 0, 2 and 3 generate at steps 2, 4 and 7 (others run to the end).
    stops = sorted({int(free[0, width + 1]), int(free[2, width + 3]), int(free[3, width + 6])})
    want = model.generate(input_ids=ids, attention_mask=mask, generation_config=GenerationConfig(
        max_new_tokens=10, do_sample=False, pad_token_id=tok.pad_token_id, eos_token_id=stops),
        cache=growing_cache(model.config, reserve=width + 10))
    got: dict[int, tuple[list[int], int, int]] = {}

    def done(row, row_ids, generated, kv):
        got[row] = (row_ids[width:width + generated].tolist(), generated, kv[0][0].shape[2])

    shapes = _decode_watching_forwards(
        model, tok, ids, mask, growing_cache(model.config, reserve=width + 10), done,
        max_new_tokens=10, stop_ids=stops, compact_fraction=0.0)
    for row in range(rows):
        ended = _stopped_at(want[row, width:].tolist(), stops)
        assert got[row][:2] == (want[row, width:width + ended].tolist(), ended)
        assert got[row][2] == width + ended - 1  # the last token is never fed
    batch_sizes = [rows_fed for rows_fed, _ in shapes]
    assert batch_sizes[0] == rows and batch_sizes[-1] < rows  # finished rows left the batch


def _decode_watching_forwards(model, tok, ids, mask, cache, done, **options):
    """`greedy_decode` with the model's forward watched: the (rows, columns) it was fed each
    forward, in order."""
    import torch

    from a2rl.inference._decode import greedy_decode

    shapes: list[tuple[int, int]] = []
    forward = model.forward

    def spy(*args, **kwargs):
        shapes.append(tuple(kwargs["input_ids"].shape))
        return forward(*args, **kwargs)

    model.forward = spy
    try:
        with torch.inference_mode():
            greedy_decode(model, tok, ids, mask, cache, stop=(), pad_id=tok.pad_token_id,
                          on_row_done=done, **options)
    finally:
        del model.forward
    return shapes


def _stopped_at(tokens: list[int], stops: list[int]) -> int:
    """How many tokens a row generates when it stops at the first of `stops` (or runs out)."""
    return next((i + 1 for i, t in enumerate(tokens) if t in stops), len(tokens))


def _repetitive_prompts(model, tok, rows: int, width: int, new: int):
    """Prompts in which each row's own greedy continuation already occurs: a random prefix, the
    model's continuation of it, then the prefix again (so prompt lookup has drafts to offer)."""
    import torch
    from transformers import GenerationConfig

    gen = torch.Generator().manual_seed(5)
    ids = torch.randint(10, 1000, (rows, width), generator=gen)
    first = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                           generation_config=GenerationConfig(
                               max_new_tokens=new, do_sample=False,
                               pad_token_id=tok.pad_token_id, eos_token_id=None))
    return torch.cat([first, ids], dim=1)


def test_prompt_lookup_gives_generates_tokens_in_fewer_forwards(engine: TransformersEngine) -> None:
    """With drafts from each row's own context, every row's tokens, stopping point and cached
    columns are plain greedy decoding's, while the forwards are fewer than the tokens (drafts
    were accepted); rejected draft columns are dropped from the cache handed back."""
    import torch
    from transformers import GenerationConfig

    from a2rl.inference._kv_cache import growing_cache

    model, tok = engine.model, engine.tokenizer
    rows, new = 5, 24
    ids = _repetitive_prompts(model, tok, rows, 10, new)
    mask = torch.ones_like(ids)
    mask[2, :3] = 0  # left padding on one row
    ids[mask == 0] = tok.pad_token_id
    width = ids.shape[1]
    free = model.generate(input_ids=ids, attention_mask=mask, generation_config=GenerationConfig(
        max_new_tokens=new, do_sample=False, pad_token_id=tok.pad_token_id, eos_token_id=None),
        return_dict_in_generate=True)
    # One row stops at a token it generates mid-way; the others run to max_new_tokens.
    stops = [int(free.sequences[1, width + 9])]
    want = model.generate(input_ids=ids, attention_mask=mask, generation_config=GenerationConfig(
        max_new_tokens=new, do_sample=False, pad_token_id=tok.pad_token_id, eos_token_id=stops))
    got: dict[int, tuple[list[int], int, int]] = {}
    kv_of: dict[int, list] = {}

    def done(row, row_ids, generated, kv):
        got[row] = (row_ids[width:width + generated].tolist(), generated, kv[0][0].shape[2])
        kv_of[row] = [(k.clone(), v.clone()) for k, v in kv]

    forwards = [columns for _, columns in _decode_watching_forwards(
        model, tok, ids, mask, growing_cache(model.config, reserve=width + new), done,
        max_new_tokens=new, stop_ids=stops, lookup=16)]
    for row in range(rows):
        ended = _stopped_at(want[row, width:].tolist(), stops)
        assert got[row][:2] == (want[row, width:width + ended].tolist(), ended)
        assert got[row][2] in (width + ended - 1, width + ended)  # the stop token only if drafted
    assert max(forwards[1:]) > 1, "no forward verified a draft"
    assert len(forwards) - 1 < new, "drafts were never accepted"
    # The cache handed back is the row's own columns: equal to encoding its tokens afresh.
    for row in (0, 2):
        cols = got[row][2]
        tokens = torch.cat([ids[row], want[row, width:]])[:cols]
        row_mask = torch.cat([mask[row], torch.ones(len(tokens) - width, dtype=mask.dtype)])
        with torch.inference_mode():
            fresh = model(input_ids=tokens[None], attention_mask=row_mask[None],
                          position_ids=(row_mask.cumsum(-1) - 1).clamp(min=0)[None],
                          use_cache=True).past_key_values
        for (k, v), layer in zip(kv_of[row], fresh.layers, strict=True):
            real = row_mask.bool()
            assert torch.allclose(k[0][:, real], layer.keys[0][:, real], atol=1e-4)
            assert torch.allclose(v[0][:, real], layer.values[0][:, real], atol=1e-4)


def test_packed_attention_matches_sdpa_on_multi_token_masked_forwards(
        engine: TransformersEngine) -> None:
    """The copy-free grouped-query attention gives the logits transformers' SDPA path gives on
    a masked multi-token forward over a cache (the shape of a draft verification)."""
    import torch

    from a2rl.inference._attention import NAME
    from a2rl.inference._kv_cache import growing_cache

    model = engine.model
    assert model.config._attn_implementation == NAME  # the engine switched it on
    gen = torch.Generator().manual_seed(9)
    prefix = torch.randint(10, 1000, (3, 20), generator=gen)
    fed = torch.randint(10, 1000, (3, 7), generator=gen)
    mask = torch.ones(3, 27, dtype=torch.long)
    mask[0, :4] = 0
    mask[1, 22:24] = 0  # a hole among the fed columns, as a rejected draft leaves
    logits = {}
    try:
        for impl in ("sdpa", NAME):
            model.set_attn_implementation(impl)
            cache = growing_cache(model.config, reserve=40)
            with torch.inference_mode():
                model(input_ids=prefix, attention_mask=mask[:, :20], cache=cache, use_cache=True)
                positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, 20:]
                logits[impl] = model(input_ids=fed, attention_mask=mask, position_ids=positions,
                                     cache=cache, use_cache=True, logits_to_keep=7).logits
    finally:
        model.set_attn_implementation(NAME)
    assert torch.allclose(logits["sdpa"], logits[NAME], atol=1e-5)
    assert torch.equal(logits["sdpa"].argmax(-1), logits[NAME].argmax(-1))


def test_draft_follows_the_longest_earlier_match() -> None:
    """A short suffix ("a desk") recurs inside a list; the draft comes from where the longest
    suffix recurred (the previous reply), the most recent among equally long matches."""
    import torch

    from a2rl.inference._decode import _draft

    # The latest token, 1, occurred three times before; only the first of them is preceded by
    # 8 as the latest one is: the previous reply, whose continuation is drafted.
    history = torch.tensor([5, 6, 7, 8, 1, 2, 1, 3, 1, 4, 9, 5, 6, 7, 8, 1])
    assert _draft(history, 4) == [2, 1, 3, 1]  # not [4, 9, ...] after the most recent "1"
    assert _draft(history, 100) == [2, 1, 3, 1, 4, 9, 5, 6, 7, 8, 1]
    assert _draft(torch.tensor([1, 2, 3]), 5) == []  # the last token never occurred before
    # Two equally long matches: the most recent wins.
    assert _draft(torch.tensor([4, 1, 2, 4, 1, 3, 4, 1]), 1) == [3]


def test_width_trusts_drafts_by_their_record_and_the_batch() -> None:
    """A lone row with a record of accepted drafts verifies a long draft in one forward; sixteen
    rows pay a column each per drafted position, so untried drafts stay short there, and
    drafts that were rejected before are not fed at all."""
    from a2rl.inference._decode import _width

    draft = list(range(40))
    assert _width([draft], [[400, 2]], 1, 1) == 41
    assert _width([draft], [[0, 0]], 1, 1) > 1  # a lone row: an untried draft is cheap
    assert _width([draft] * 16, [[0, 0]] * 16, 16, 16) <= 3
    assert _width([draft] * 16, [[0, 30]] * 16, 16, 16) == 1
    assert _width([draft] * 16, [[2000, 10]] * 16, 16, 16) > 16
    assert _width([[]] * 16, [[2000, 10]] * 16, 16, 16) == 1  # nothing drafted
