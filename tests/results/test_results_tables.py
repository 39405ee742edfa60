"""The long tables of `a2rl results export` and their DataFrames (`samples_df`, `messages_df`,
`events_df`, like inspect_ai's): one row per evaluated item, per message, per agent event.

The run is the Harbor fixture imported for real; its evaluations are verdicts of the arith
task's own scorer (`a2rl eval --predictions`), stored where the grader stores them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from a2rl._errors import A2RLError
from a2rl.cli import app
from a2rl.evaluate import eval_predictions
from a2rl.importers import harbor
from a2rl.results import TABLE_NAMES, events_df, export_results, messages_df, samples_df
from a2rl.schema import AgentEvent, read_jsonl
from a2rl.tasks import get_task

TRIAL = (Path(__file__).parent.parent / "fixtures" / "imports" / "harbor" / "2026-11-20__14-02-11"
         / "gsm8k__Xk3pQ7a")
ARITH = {"n_heldout": 6, "heldout_seed": 11, "n_train": 20}


def _evaluation(tmp_path: Path, name: str, right: set[int]) -> Path:
    """details.jsonl of the arith scorer on predictions right for the items in `right`."""
    task = get_task("arith", ARITH)
    preds = tmp_path / f"{name}.jsonl"
    preds.write_text("".join(
        json.dumps({"id": i, "completion": item["answer"] if n in right else "no idea"}) + "\n"
        for n, (i, item) in enumerate(zip(task.item_ids(), task.heldout_items(), strict=True))))
    _, folder = eval_predictions(task, preds, out=tmp_path / name)
    return folder / "details.jsonl"


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    run_dir = harbor.import_run(TRIAL, runs)
    for sid, right in (("baseline", {0}), ("s0001", {0, 2, 5})):
        (run_dir / "evals" / sid).mkdir(parents=True)
        shutil.copy(_evaluation(tmp_path, sid, right), run_dir / "evals" / sid / "details.jsonl")
    return runs


def _run_dir(runs: Path) -> Path:
    [run_dir] = [p.parent for p in runs.glob("*/*/run.json")]
    return run_dir


def test_samples_hold_each_item_with_its_prompt_completion_and_verdict(runs: Path) -> None:
    df = samples_df(runs)
    assert len(df) == 12
    assert list(df["submission_id"]) == ["baseline"] * 6 + ["s0001"] * 6
    details = [json.loads(line) for line in
               (_run_dir(runs) / "evals" / "s0001" / "details.jsonl").read_text().splitlines()]
    mine = df[df["submission_id"] == "s0001"]
    assert list(mine["item_id"]) == [d["id"] for d in details]
    assert list(mine["prompt"]) == [d["prompt"] for d in details]
    assert list(mine["completion"]) == [d["completion"] for d in details]
    assert list(mine["score"]) == [1.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    assert df.groupby("submission_id")["score"].mean().to_dict() == {"baseline": 1 / 6, "s0001": 0.5}
    assert set(mine["split"]) == {"all"} and set(df["run_id"]) == {_run_dir(runs).name}


def test_messages_read_like_the_conversation(runs: Path) -> None:
    df = messages_df([runs])
    assert list(df["message"]) == list(range(len(df)))
    assert df.iloc[0]["role"] == "user" and "Post-train the base model" in df.iloc[0]["text"]
    assert set(df["role"]) == {"user", "assistant", "tool"}
    tools = df[df["role"] == "tool"]
    assert len(tools) == 8 and set(tools["tool_name"]) == {"Bash", "Write"}
    gen = tools[tools["command"].fillna("").str.contains("gen_data.py")].iloc[0]
    assert "kept 5930 of 7473" in gen["text"]
    written = tools[tools["tool_name"] == "Write"]
    assert list(written["path"]) == ["gen_data.py", "train_sft.py"]
    assert list(df["turn"]) == sorted(df["turn"])


def test_events_are_every_agent_event_flat_with_outputs(runs: Path) -> None:
    df = events_df(runs)
    events = read_jsonl(_run_dir(runs) / "agent" / "events.jsonl", AgentEvent)
    assert len(df) == len(events) and list(df["kind"]) == [e.kind for e in events]
    calls = df[df["kind"] == "tool_call"]
    assert calls["output"].notna().all()
    assert {json.loads(x)["tool_use_id"] for x in calls["extra"]} == {f"toolu_0{i}" for i in range(1, 9)}
    assert df["input_tokens"].sum() == sum(e.input_tokens or 0 for e in events)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_export_writes_the_long_tables_pandas_reads(runs: Path, tmp_path: Path, suffix: str) -> None:
    out = tmp_path / "out" / f"results{suffix}"
    written = dict(export_results([runs], out, tables=TABLE_NAMES))
    for name, rows in (("samples", 12), ("messages", len(messages_df(runs))),
                       ("events", len(events_df(runs)))):
        path = out.with_name(f"results.{name}{suffix}")
        assert written[path] == rows
        frame = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
        assert len(frame) == rows
    samples = pd.read_csv(out.with_name("results.samples.csv")) if suffix == ".csv" \
        else pd.read_parquet(out.with_name("results.samples.parquet"))
    assert samples["score"].sum() == 4.0


def test_cli_chooses_the_tables(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "o" / "results.csv"
    done = CliRunner().invoke(app, ["results", "export", str(runs), "-o", str(out),
                                    "--tables", "samples"])
    assert done.exit_code == 0, done.output
    assert "results.samples.csv (12 rows)" in done.output
    assert not out.with_name("results.events.csv").exists()
    none = CliRunner().invoke(app, ["results", "export", str(runs), "-o", str(out), "--tables", "none"])
    assert none.exit_code == 0 and "samples" not in none.output
    assert TABLE_NAMES == ("samples", "messages", "events")
    with pytest.raises(A2RLError, match="no table named 'turns'"):
        export_results([runs], out, tables=["turns"])


def test_damaged_or_linked_details_are_not_read(runs: Path, tmp_path: Path) -> None:
    run_dir = _run_dir(runs)
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps({"id": "k", "completion": "token-5c19e7d40"}) + "\n")
    base = run_dir / "evals" / "baseline" / "details.jsonl"
    base.unlink()
    base.symlink_to(secret)  # a link is not followed
    mine = run_dir / "evals" / "s0001" / "details.jsonl"
    with mine.open("a") as fh:  # lines that are no JSON object are passed over
        fh.write("{broken\n[1, 2]\n")
        # another task's shapes: a numeric answer and an interactive trajectory
        fh.write(json.dumps({"id": 7, "prompt": "p", "completion": "c", "answer": 3, "score": 1}) + "\n")
        fh.write(json.dumps({"episode_id": "e1", "task": "alfworld", "reward": 0.5, "success": False,
                             "steps": [{"observation": "You are in a room.", "completion": "go north",
                                        "action": "go north"}]}) + "\n")
    df = samples_df(runs)
    assert set(df["submission_id"]) == {"s0001"} and len(df) == 8
    assert "token-5c19e7d40" not in df.to_csv()
    episode = df[df["item_id"] == "e1"].iloc[0]
    assert (episode["prompt"], episode["completion"], episode["score"], episode["steps"]) == (
        "You are in a room.", "go north", 0.5, 1)
    assert not episode["success"]
    out = tmp_path / "mixed" / "results.parquet"  # answers of text and numbers: still Parquet
    export_results([runs], out, tables=["samples"])
    back = pd.read_parquet(out.with_name("results.samples.parquet"))
    assert sorted(back["answer"].dropna().unique()) == sorted({"3", *df["answer"].dropna().astype(str)})
