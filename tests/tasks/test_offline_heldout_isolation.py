"""Issue 17, class 2, for the offline corpora of alpacaeval and deepsearchqa: held-out items must
be neither readable nor inferable from inside the agent's sandbox.

The sandbox mounts the Python environment read-only, a2rl's package data included. So:
- deepsearchqa: no held-out question, answer or entity name may be in any file of the package
  (they come from a world generated from the installation's secret seed under $A2RL_HOME, which
  is never mounted), and the train questions are not drawn from the held-out world (the
  complement of the train set reveals nothing);
- alpacaeval: the hand-written held-out references live in one file that the task names in
  `sandbox_masked_paths()`; no other package file holds any of them, and inside the sandbox
  that file reads as empty.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import a2rl
from a2rl.tasks.alpacaeval.task import AlpacaEvalTask
from a2rl.tasks.deepsearchqa.task import DeepSearchQATask

PACKAGE = Path(a2rl.__file__).resolve().parent


def _package_text() -> dict[Path, str]:
    """Every text file of the installed a2rl package (what a sandboxed agent can read unless
    masked)."""
    out: dict[Path, str] = {}
    for path in PACKAGE.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            try:
                out[path] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
    return out


def _dsqa_secrets(task: DeepSearchQATask) -> list[str]:
    """What would give the held-out set away: questions, entity names and answer items."""
    out: list[str] = []
    for e in task.heldout_episodes():
        out += [e.payload["question"], e.payload["anchor"], *e.payload["answer_items"]]
    return out


def test_no_package_file_holds_a_deepsearchqa_heldout_item() -> None:
    task = DeepSearchQATask({"source": "offline"})
    secrets = _dsqa_secrets(task)
    assert len(secrets) > 150
    for path, text in _package_text().items():
        leaked = [s for s in secrets if s in text]
        assert not leaked, f"{path.relative_to(PACKAGE)} holds held-out material: {leaked[:3]}"


def test_the_generator_without_the_seed_does_not_give_the_heldout_set() -> None:
    """An agent can run the (visible) generator with any seed it likes: without this
    installation's secret, none of a few hundred guesses reproduces a held-out name."""
    from a2rl.tasks.deepsearchqa.make_data import heldout_world

    anchors = {e.payload["anchor"] for e in DeepSearchQATask({"source": "offline"}).heldout_episodes()}
    for guess in [*range(1, 40), 20250101, 12345, 42, 2**31 - 2]:
        _docs, qs = heldout_world(guess)
        assert not anchors & {str(q["anchor"]) for q in qs}, guess


def test_deepsearchqa_train_set_is_not_the_complement_of_the_heldout_set() -> None:
    """The train questions are every question of the train world; the held-out questions are
    about another world. Train ∪ held-out is not a shared space with holes in it."""
    task = DeepSearchQATask({"source": "offline"})
    train = task.train_episodes()
    held = task.heldout_episodes()
    train_entities = {e.payload["anchor"] for e in train}
    held_entities = {e.payload["anchor"] for e in held}
    assert not train_entities & held_entities
    # the documents searched on held-out episodes are not the shipped ones
    shipped_titles = {json.loads(line)["title"] for line in
                      (PACKAGE / "tasks" / "deepsearchqa" / "data" / "corpus.jsonl").read_text().splitlines()}
    held_titles = {d["title"] for d in task._offline_heldout[0]}
    assert not shipped_titles & held_titles


def test_alpacaeval_heldout_references_are_only_in_the_masked_file() -> None:
    task = AlpacaEvalTask({"source": "offline"})
    masked = {p.resolve() for p in AlpacaEvalTask.sandbox_masked_paths()}
    assert masked and all(p.is_file() for p in masked)
    held = task.heldout_items()
    secrets = [i["reference"] for i in held]
    texts = _package_text()
    for path, text in texts.items():
        leaked = [s for s in secrets if s in text or json.dumps(s)[1:-1] in text]
        if path.resolve() in masked:
            assert len(leaked) == len(secrets)  # the masked file is the one that holds them all
        else:
            assert not leaked, f"{path.relative_to(PACKAGE)} holds held-out references"
    # the train rows were written independently: no held-out instruction among them
    assert not {i["instruction"] for i in held} & {r["instruction"] for r in task.train_items()}


# ---- inside the sandbox ------------------------------------------------------------------

_PROBE = r"""
import json, pathlib, sys
secrets = json.loads(sys.argv[1])
root = pathlib.Path(sys.argv[2])
found = []
for path in root.rglob("*"):
    try:
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="ignore")
            found += [str(path) for s in secrets if s in text]
    except OSError:
        pass
print(json.dumps(sorted(set(found))))
"""


def test_a_sandboxed_agent_finds_no_heldout_material(tmp_path: Path) -> None:
    """An agent inside bwrap reads every file of the mounted a2rl package: it finds none of the
    held-out references (alpacaeval, masked) or questions/answers (deepsearchqa, not on disk)."""
    masks_mod = pytest.importorskip("a2rl.sandbox._masks")  # the sandbox's masking (h-runner)
    from a2rl.sandbox import get_sandbox

    sandbox = get_sandbox("bwrap")
    probe = getattr(sandbox, "probe", None)
    if probe is not None:
        try:
            probe()
        except a2rl.A2RLError as exc:
            pytest.skip(f"bwrap cannot start here: {exc}")
    secrets = [i["reference"] for i in AlpacaEvalTask({"source": "offline"}).heldout_items()]
    secrets += _dsqa_secrets(DeepSearchQATask({"source": "offline"}))
    from a2rl.tasks import task_mask_hooks

    masked, visible = task_mask_hooks(["alpacaeval", "deepsearchqa"])
    ws = tmp_path / "ws"
    ws.mkdir()
    argv = sandbox.wrap([sys.executable, "-c", _PROBE, json.dumps(secrets), str(PACKAGE)], workspace=ws,
                        masks=masks_mod.sandbox_masks(masked, visible))
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=ws)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
    # ...while the train side the in-sandbox tools need is still there
    corpus = PACKAGE / "tasks" / "deepsearchqa" / "data" / "corpus.jsonl"
    argv = sandbox.wrap([sys.executable, "-c", f"print(len(open({str(corpus)!r}).read()))"], workspace=ws,
                        masks=masks_mod.sandbox_masks(masked, visible))
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ws)
    assert out.returncode == 0 and int(out.stdout.strip()) == len(corpus.read_text()), out.stderr[-2000:]


@pytest.mark.parametrize(("task", "line", "flagged"), [
    ("alpacaeval", "hf_hub_download('tatsu-lab/alpaca_eval', 'alpaca_eval_gpt4_baseline.json')", True),
    ("alpacaeval", "refs = json.load(open(pkg / 'data' / 'offline_heldout.json'))", True),
    ("alpacaeval", "rows = [json.loads(line) for line in open('data/train.jsonl')]", False),
    ("deepsearchqa", "from a2rl.tasks.deepsearchqa.make_data import heldout_world; heldout_world(7)", True),
    ("deepsearchqa", "seed = open(home / 'secrets' / 'deepsearchqa-heldout-seed').read()", True),
    ("deepsearchqa", "episodes = [json.loads(l) for l in open('data/episodes.jsonl')]", False),
])
def test_audit_flags_reaching_for_heldout_material(task: str, line: str, flagged: bool) -> None:
    """The analysis' code audit (Task.audit_patterns) reports an agent's code that goes for the
    held-out material of these tasks, and not ordinary training code."""
    import re

    from a2rl.analysis._audit import privileged_patterns

    assert any(re.search(p, line) for p in privileged_patterns(task)) is flagged
