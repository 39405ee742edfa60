"""`a2rl certify`: every built-in task's scorer against the adversarial policy library (no class
may score above the base model's interval), the example task from its folder, and a
deliberately weak task whose winning classes the certificate must name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from a2rl.certify import Scored, certify
from a2rl.cli import app
from a2rl.grader import ScoreInterval
from a2rl.inference import GenerationSettings
from a2rl.tasks import ItemVerdict, StaticTextTask, get_task, list_tasks

EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "tasks" / "reverse"
OFFLINE = {"gsm8k": {"source": "offline"}, "aime2025": {"source": "offline"},
           "deepsearchqa": {"source": "offline"}, "alpacaeval": {"source": "offline"},
           "alfworld": {"n_heldout": 2, "n_train": 4}}  # games are generated on first use
ITEMS = {"aime2025": 4, "humaneval": 4, "alfworld": 2}
"""Fewer items where scoring one is slow (8 samples of 1 MiB, a sandboxed program, a simulated
household): the classes are the same, the suite stays short."""
TURNS = {"alfworld": 6}
"""ALFWorld's engine takes a good part of a second a step: its scripted policies act six times
(the command line's default, 60, outlasts every step limit)."""


@pytest.mark.parametrize("name", list_tasks())
def test_no_adversarial_class_beats_the_base_model_on_a_builtin_task(name: str) -> None:
    task = get_task(name, OFFLINE.get(name, {}))
    called: list[str] = []

    def base(t: Any) -> Scored:  # reached only when some class scores above zero
        called.append(t.name)
        from a2rl.certify import base_model_score

        return base_model_score(t, "smollm2-135m")

    cert = certify(task, items=ITEMS.get(name, 8), base_score=base, lazy_base=True,
                   turns=TURNS.get(name, 60))
    assert cert.winners == [], cert.model_dump_json(indent=1)
    assert cert.reference.status != "scored" or (cert.reference.score or 0) > 0
    ran = [c for c in cert.classes if c.status != "not-applicable"]
    if all(c.status == "not-run" for c in ran):
        # a judged task without a judge endpoint: every class says so, none passes silently
        assert task.reward_kind == "judge" and ran
        assert all("judge" in (c.reason or "").lower() for c in ran)
        assert cert.passed is None and not called
    else:
        assert all(c.status == "scored" for c in ran), cert.model_dump_json(indent=1)


class SubstringTask(StaticTextTask):
    """A weak scorer: right when the gold appears anywhere in the completion."""

    name = "substring"
    level = "L1"
    reward_kind = "rule"
    version = "1"
    generation = GenerationSettings(max_new_tokens=8)

    def heldout_items(self) -> list[dict[str, Any]]:
        return [{"id": f"q{i}", "question": f"{i} * 7?", "answer": str(i * 7)} for i in range(30)]

    def messages(self, item: dict[str, Any]) -> list[dict[str, str]]:
        return [{"role": "user", "content": item["question"]}]

    def score_completion(self, item: dict[str, Any], completion: str) -> ItemVerdict:
        return ItemVerdict(score=float(item["answer"] in completion), extracted=completion[:20])

    def gold_answer(self, item: dict[str, Any]) -> str | None:
        return str(item["answer"])

    def write_train_data(self, data_dir: Path) -> list[Path]:
        return []

    def description(self, *, chat_preview: Any = None) -> str:
        return "multiply by 7"


def test_a_weak_scorer_is_caught_and_its_winning_classes_named() -> None:
    base = Scored(status="scored", score=10.0,
                  interval=ScoreInterval(low=3.0, high=25.0, method="wilson", n_items=30))
    cert = certify(SubstringTask(), items=0, base_score=base, base_model="stand-in")
    assert cert.passed is False
    assert {"many-candidates", "repeated-markers", "hedges-negations", "huge-output"} <= \
        set(cert.winners)
    assert "empty-output" not in cert.winners and "forged-output" not in cert.winners
    assert cert.reference.score == 100.0


def test_the_example_task_folder_is_certified_from_the_cli(tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["certify", str(EXAMPLE), "--items", "20", "--base", "lazy",
                                   "--out", str(tmp_path)])
    assert out.exit_code == 0, out.output
    cert = json.loads((tmp_path / "certificate.json").read_text())
    assert cert["task"] == "reverse" and cert["items"] == 20
    by_name = {c["name"]: c for c in cert["classes"]}
    assert by_name["hedges-negations"]["status"] == "scored"
    assert by_name["hedges-negations"]["score"] == 0.0
    assert by_name["leave-interpreter"]["status"] == "not-applicable"
    assert "PASSED" in (tmp_path / "certificate.md").read_text()
    page = (tmp_path / "certificate.html").read_text()
    assert "<script" not in page and "Scorer certificate: reverse" in page


def test_bad_arguments_are_refused_with_the_fix(tmp_path: Path) -> None:
    bad = CliRunner().invoke(app, ["certify", "arith", "--classes", "no-such-class"])
    assert bad.exit_code != 0 and "choose from" in str(bad.exception.fix)  # type: ignore[union-attr]
    (tmp_path / "empty").mkdir()
    none = CliRunner().invoke(app, ["certify", str(tmp_path / "empty")])
    assert none.exit_code != 0 and "task.py" in str(none.exception)
