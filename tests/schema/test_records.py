"""The records package: one place for every persisted format, documented and versioned."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

import a2rl.schema as records
from a2rl._errors import A2RLError
from a2rl.schema import SCHEMAS, AgentEvent, RunAnalysis, append_jsonl, read_json, read_jsonl

RECORDS = Path(records.__file__).parent


def _undocumented(path: Path) -> list[str]:
    """Fields of pydantic models in a module that have no docstring right after them."""
    missing = []
    for cls in ast.walk(ast.parse(path.read_text())):
        if not isinstance(cls, ast.ClassDef):
            continue
        body = cls.body
        for i, st in enumerate(body):
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and \
                    st.target.id != "model_config":
                nxt = body[i + 1] if i + 1 < len(body) else None
                if not (isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                        and isinstance(nxt.value.value, str)):
                    missing.append(f"{path.name}:{cls.name}.{st.target.id}")
    return missing


def test_every_field_of_every_record_has_a_docstring() -> None:
    missing = [m for p in sorted(RECORDS.glob("_*.py")) for m in _undocumented(p)]
    assert not missing, missing


@pytest.mark.parametrize("name", ["run", "submission", "baseline", "evaluation-job", "analysis"])
def test_top_level_formats_carry_a_version(name: str) -> None:
    model = SCHEMAS[name][0]
    assert "version" in model.model_fields and model.model_fields["version"].default >= 1


def test_every_schema_renders() -> None:
    for name, (model, where) in SCHEMAS.items():
        schema = model.model_json_schema()
        assert schema["title"] == model.__name__ and where, name


def test_analysis_imports_records_not_runner_or_grader() -> None:
    code = ("import sys, a2rl.analysis; bad = [m for m in sys.modules if m.startswith("
            "('a2rl.runner', 'a2rl.grader'))]; print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_jsonl_append_and_read(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    append_jsonl(path, AgentEvent(kind="turn", turn=0, t_s=0.0))
    with path.open("a") as fh:
        fh.write('{"kind": "turn", "tu')  # a line torn by a crash
    append_jsonl(path, AgentEvent(kind="command", turn=0, t_s=1.0, command="ls"))
    events = read_jsonl(path, AgentEvent)
    assert [e.kind for e in events] == ["turn", "command"]
    with pytest.raises(A2RLError, match=r"events.jsonl:2 is not a valid AgentEvent"):
        read_jsonl(path, AgentEvent, skip_bad=False)


def test_read_json_names_the_problem(tmp_path: Path) -> None:
    with pytest.raises(A2RLError, match="does not exist"):
        read_json(tmp_path / "analysis.json", RunAnalysis)
    (tmp_path / "analysis.json").write_text('{"run_id": 3}')
    with pytest.raises(A2RLError, match="not a valid RunAnalysis") as exc:
        read_json(tmp_path / "analysis.json", RunAnalysis)
    assert "a2rl schema" in (exc.value.fix or "")


def test_schema_command() -> None:
    from typer.testing import CliRunner

    from a2rl.cli import app

    listing = CliRunner().invoke(app, ["schema"], terminal_width=200)
    assert listing.exit_code == 0 and "run" in listing.output and "RunRecord v1" in listing.output
    shown = CliRunner().invoke(app, ["schema", "analysis"], terminal_width=200)
    schema = json.loads(shown.output)
    assert schema["title"] == "RunAnalysis" and "version" in schema["properties"]
    unknown = CliRunner().invoke(app, ["schema", "nope"])
    assert isinstance(unknown.exception, A2RLError) and "choose one of" in (unknown.exception.fix or "")


def test_old_records_without_a_version_still_read() -> None:
    class_ = SCHEMAS["submission"][0]
    assert issubclass(class_, BaseModel)
    line = {"id": "s0001", "seq": 1, "received_at": "2026-01-01T00:00:00Z", "model_path": "output/v1",
            "status": "scored", "score": 30.0, "baseline": 20.0, "task_fingerprint": "f"}
    assert class_.model_validate(line).version == 1  # type: ignore[attr-defined]
