"""Chat templates and stop tokens, shared by the inference backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# End-of-turn markers of common chat formats (ChatML, Llama 3, Gemma, Mistral/Llama 2).
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|endoftext|>", "</s>")


def load_tokenizer(model_dir: Path, chat_template_from: Path | None = None) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), trust_remote_code=False)
    if chat_template_from is not None and Path(chat_template_from) != Path(model_dir):
        reference = AutoTokenizer.from_pretrained(str(chat_template_from), trust_remote_code=False)
        tokenizer.chat_template = reference.chat_template
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


def render_chat(tokenizer: Any, messages: list[dict[str, str]]) -> str:
    if getattr(tokenizer, "chat_template", None):
        return str(tokenizer.apply_chat_template(messages, tokenize=False,
                                                 add_generation_prompt=True))
    # Base models without a template: plain "role: content" turns.
    lines = [f"{m['role']}: {m['content']}" for m in messages]
    return "\n".join(lines) + "\nassistant:"


def stop_token_ids(tokenizer: Any) -> list[int]:
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    vocab = tokenizer.get_vocab()
    for tok in END_OF_TURN_TOKENS:
        if tok in vocab and tok in (tokenizer.all_special_tokens or []):
            ids.add(vocab[tok])
    return sorted(i for i in ids if i is not None)
