"""The transformers engine: batched greedy generation whose decoding the submission cannot steer."""

from __future__ import annotations

import json
from pathlib import Path

from a2rl.inference import GenerationSettings, cut_at_stop, load_engine

PROMPTS = ["Calculate 1 + 2.", "Calculate 40 - 3.", "hi", "What is 7 + 8? Answer quickly."]


def test_greedy_batched_matches_one_by_one(tiny_model: Path) -> None:
    engine = load_engine(tiny_model, backend="transformers", batch_size=3)
    settings = GenerationSettings(max_new_tokens=6)
    chats = [engine.apply_chat_template([{"role": "user", "content": p}]) for p in PROMPTS]
    batched = engine.generate(chats, settings)
    single = [engine.generate([c], settings)[0] for c in chats]
    assert batched == single
    assert engine.generate(chats, settings) == batched  # deterministic


def test_submission_cannot_steer_decoding_or_prompt(tiny_model: Path, model_copy,
                                                    tmp_path: Path) -> None:
    hostile = model_copy(tmp_path / "hostile")
    (hostile / "generation_config.json").write_text(json.dumps(
        {"do_sample": True, "temperature": 5.0, "top_k": 3, "max_new_tokens": 1,
         "eos_token_id": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}))
    (hostile / "chat_template.jinja").write_text("CHEAT {{ messages[0]['content'] }}")
    base = load_engine(tiny_model, backend="transformers")
    evil = load_engine(hostile, chat_template_from=tiny_model, backend="transformers")
    msgs = [{"role": "user", "content": "Calculate 1 + 2."}]
    assert evil.apply_chat_template(msgs) == base.apply_chat_template(msgs)
    assert "CHEAT" not in evil.apply_chat_template(msgs)
    settings = GenerationSettings(max_new_tokens=6)
    prompts = [base.apply_chat_template(msgs)]
    assert evil.generate(prompts, settings) == base.generate(prompts, settings)


def test_cut_at_stop() -> None:
    assert cut_at_stop("a\nAction: b", ["\nAction:"]) == "a"
    assert cut_at_stop("abc", []) == "abc"
    assert cut_at_stop("x<|im_end|>y\n", ["\n", "<|im_end|>"]) == "x"


def test_stop_strings_end_generation_early(smollm2_dir: Path) -> None:
    engine = load_engine(smollm2_dir, backend="transformers")
    prompt = [engine.apply_chat_template([{"role": "user", "content": "Count: 1 2 3"}])]
    free = engine.generate(prompt, GenerationSettings(max_new_tokens=30))[0]
    assert len(free) > 10
    stop = free[5:8]  # a string the greedy continuation certainly produces
    cut = engine.generate(prompt, GenerationSettings(max_new_tokens=30, stop=(stop,)))[0]
    assert cut == free[: free.index(stop)]
