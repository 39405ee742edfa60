"""Shared fixtures: an isolated $A2RL_HOME per test, the embedded SmolLM2 (converted once and
cached across test runs), and a tiny random Llama with the SmolLM2 tokenizer for fast loops."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Two test workers share two cores, and each torch process starts a thread per core. With
# OpenMP's default busy-waiting, a thread spins at every barrier while another process holds its
# core: two 2-thread SFT loops side by side ran 3.7x slower than one alone (255 s vs 68.6 s for
# the same steps, measured on a 2-core machine), with passive waiting 1.8x (122 s). A process
# alone pays a little for it (training ~1.04x, a static evaluation ~1.15x: bench/shared_cores.py,
# docs/benchmarks.md), far less than the suite gains. Set before any test imports torch;
# test subprocesses, the evaluation child and the agent's sandbox inherit it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

REPO = Path(__file__).resolve().parent.parent

# The tests mirror the packages (tests/<package>/test_*.py); a test module may use another's
# helpers (`from test_integration import config`), so every test folder is importable.
TESTS = Path(__file__).resolve().parent
sys.path[:0] = [str(d) for d in sorted(TESTS.iterdir())
                if d.is_dir() and any(d.glob("test_*.py")) and str(d) not in sys.path]

# Converted models survive between test sessions (the conversion takes ~30 s).
MODEL_CACHE_HOME = Path(os.environ.get("A2RL_TEST_MODEL_HOME", REPO / ".cache" / "test-home"))

TINY_TASK = {"n_train": 40, "n_heldout": 6, "heldout_seed": 4242}


@pytest.fixture(autouse=True)
def a2rl_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("a2rl-home")
    monkeypatch.setenv("A2RL_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """The real embedded model, resolved through a2rl's own conversion code."""
    import fcntl

    from a2rl.models import resolve_model

    old = os.environ.get("A2RL_HOME")
    os.environ["A2RL_HOME"] = str(MODEL_CACHE_HOME)
    MODEL_CACHE_HOME.mkdir(parents=True, exist_ok=True)
    # Test workers (pytest-xdist) share the cache: one converts, the others wait for it.
    with open(MODEL_CACHE_HOME / ".convert.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return resolve_model("smollm2-135m").path
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            if old is None:
                os.environ.pop("A2RL_HOME", None)
            else:
                os.environ["A2RL_HOME"] = old


@pytest.fixture(scope="session")
def tiny_model(smollm2_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random Llama (≈3 M parameters) with the SmolLM2 tokenizer and chat template."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    out = tmp_path_factory.mktemp("tiny-model")
    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=512, tie_word_embeddings=True,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


LOOK = "look"
"""What `looking_model` says at every turn: a valid ALFWorld command, no action elsewhere."""


@pytest.fixture(scope="session")
def looking_model(smollm2_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer Llama with the SmolLM2 tokenizer whose every completion is `look`, then the end
    of the turn (greedy or sampled): a bigram model by construction. For end-to-end runs that
    need turns and episodes, not their content: the random `tiny_model` never ends a turn, so
    each of its ALFWorld episodes is 50 steps of 100 tokens and each GSM8K item 512 tokens.

    The layers add nothing to the residual stream (zero output projections), so the final
    hidden state is the normalised embedding of the last token. Every embedding has a constant
    first coordinate; `look`'s also has a second one. The output rows: `look` reads the first
    coordinate minus twice the second, the end of turn reads the second: after any token but
    `look` the logits are 56.6 for `look` and 0 for the rest, after `look` 40 for the end of
    turn and -40 for `look`."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    out = tmp_path_factory.mktemp("looking-model")
    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    (look,) = tok.encode(LOOK, add_special_tokens=False)
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=4096, tie_word_embeddings=False,
                      bos_token_id=tok.bos_token_id, eos_token_id=eos)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        emb = model.model.embed_tokens.weight
        emb.zero_()
        emb[:, 0] = 1.0
        emb[look, 1] = 1.0
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        head = model.lm_head.weight
        head.zero_()
        head[look, 0], head[look, 1] = 10.0, -20.0
        head[eos, 1] = 10.0
        # what it says, checked here so that a transformers change cannot make it silently chatty
        prompt = tok.apply_chat_template([{"role": "user", "content": "Go."}], tokenize=True,
                                         add_generation_prompt=True, return_tensors="pt")
        ids = prompt if isinstance(prompt, torch.Tensor) else prompt["input_ids"]
        first = int(model(ids).logits[0, -1].argmax())
        second = int(model(torch.cat([ids, torch.tensor([[first]])], 1)).logits[0, -1].argmax())
    assert (first, second) == (look, eos), (first, second)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture
def model_copy(tiny_model: Path, tmp_path: Path):
    """Copy a model folder somewhere (optionally into a workspace's output/)."""

    def make(dest: Path, src: Path | None = None) -> Path:
        shutil.copytree(src or tiny_model, dest)
        for p in dest.iterdir():
            p.chmod(0o644)
        return dest

    return make


def perturb(model_dir: Path, scale: float = 0.01) -> None:
    """Change every floating tensor slightly (a 'trained' model with different weights)."""
    import torch
    from safetensors.torch import load_file, save_file

    f = model_dir / "model.safetensors"
    tensors = load_file(f)
    gen = torch.Generator().manual_seed(1)
    tensors = {k: v + scale * torch.randn(v.shape, generator=gen) if v.is_floating_point() else v
               for k, v in tensors.items()}
    save_file(tensors, f, metadata={"format": "pt"})


@contextlib.contextmanager
def serve_on_loopback(app: object) -> Iterator[int]:
    """Serve an ASGI app (a scripted judge or search API) on 127.0.0.1; yields the port."""
    import threading
    import time

    import uvicorn

    from a2rl.grader._server import bind_socket

    sock = bind_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, log_level="warning",  # type: ignore[arg-type]
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "scripted server did not start"
        time.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


# Agent CLIs installed by the tests (npm/pip, ~10 s each) survive between test sessions.
AGENTS_CACHE = Path(os.environ.get("A2RL_TEST_AGENTS_DIR") or REPO / ".cache" / "agents")


@pytest.fixture
def installed_cli(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """installed_cli('codex') -> the launcher, its pinned CLI installed (from the package
    registry, once) into the test cache. Without a registry it skips, except in CI."""
    from a2rl._errors import A2RLError
    from a2rl.agents import get_agent
    from a2rl.agents._cli import AGENTS_DIR_ENV, install

    monkeypatch.setenv(AGENTS_DIR_ENV, str(AGENTS_CACHE))

    def make(name: str):  # type: ignore[no-untyped-def]
        agent = get_agent(name)
        try:
            install(name, agent.package)  # type: ignore[attr-defined]
        except A2RLError as exc:
            if os.environ.get("CI"):
                raise
            pytest.skip(f"cannot install the {name} CLI here: {exc}")
        return agent

    return make


def short_decoding(monkeypatch: pytest.MonkeyPatch, task_cls: type, *, max_new_tokens: int = 24,
                   max_steps: int = 2) -> None:
    """Cap a task class's decoding for an in-process test on the random tiny model, which never
    ends a turn: every static completion would otherwise run to the task's full token budget
    (512 for gsm8k, humaneval, alpacaeval) and every episode to its step limit. The code path is
    unchanged (the same engine, prompts, stop strings, parser and scorer); only the budget
    shrinks. Evaluation children and sandboxed commands do not see the patch."""
    import dataclasses

    generation = getattr(task_cls, "generation", None)
    if generation is not None:
        monkeypatch.setattr(task_cls, "generation", dataclasses.replace(
            generation, max_new_tokens=min(generation.max_new_tokens, max_new_tokens)))
    rollout = getattr(task_cls, "rollout", None)
    if rollout is not None:
        gen = rollout.generation
        monkeypatch.setattr(task_cls, "rollout", dataclasses.replace(
            rollout, max_steps=min(rollout.max_steps, max_steps),
            generation=dataclasses.replace(gen, max_new_tokens=min(gen.max_new_tokens,
                                                                   max_new_tokens))))


# The longest files first, longest to shortest (worker seconds in a full run, 2026-12-02): with
# `--dist loadfile` a file runs on one worker from start to end, so a long file started last sets
# the suite's wall time while the other worker sits idle (measured: the real-model file, 16 min,
# started last). xdist would put the files with the most tests first (its default reordering,
# switched off in pyproject's addopts), so this order is the one the workers take.
_LONGEST_FIRST = (
    "test_reference_agent_slow.py",      # 982 s
    "test_offline_eval.py",              # 670 s before its ALFWorld games were shared
    "test_integration.py",               # 303 s
    "test_integration_reference.py",     # 283 s
    "test_lifecycle_inflight.py",        # 264 s
    "test_alfworld.py",                  # 214 s
    "test_multi.py",                     # 205 s
    "test_vllm_interactive.py",          # 180 s
    "test_vllm_static.py",               # 148 s
    "test_humaneval.py",                 # 140 s
    "test_scaffold_e2e.py",              # 137 s
    "test_sweep_ray.py",                 # 129 s
    "test_reference_humaneval.py",       # 128 s
    "test_sweep_slurm.py",               # 111 s
    "test_fixed_recipe.py",              # 108 s
    "test_scaffold_reference.py",        # 106 s
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(_LONGEST_FIRST)}
    # A stable sort: the files not listed keep their collection order, after the listed ones.
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


REQUIRE_BACKENDS = "A2RL_REQUIRE_BACKENDS"
"""Set to 1 (`.ci/run` does): a test skipped because a sandbox backend or the exec tracer cannot
start fails instead, so a host without user namespaces or strace cannot pass the security
suites without running them."""
_BACKEND_SKIP = ("bwrap", "bubblewrap", "strace", "podman", "sandbox", "testjail")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if not report.skipped or os.environ.get(REQUIRE_BACKENDS) != "1":
        return
    reason = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr)
    if any(word in reason.lower() for word in _BACKEND_SKIP):
        report.outcome = "failed"
        report.longrepr = (f"skipped where a backend is required ({REQUIRE_BACKENDS}=1): "
                           f"{reason}")
