"""The results layer: tidy rows from a2rl and imported runs, per-cell statistics with bootstrap
intervals under the flag policy, the trajectory study's strategy tables, and the export/list commands."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from a2rl._errors import A2RLError
from a2rl.cli import app
from a2rl.results import (
    Policy,
    aggregate,
    bootstrap_ci,
    change_rates,
    convergence,
    export_results,
    load_runs,
    methods_attempted_adopted,
    phase_distribution,
    run_row,
    submission_rows,
    summarize,
    workspace_stats,
)

sys.path.insert(0, str(Path(__file__).parent.parent / "fixtures" / "results"))
from make_results import Spec, make_results, write_run  # noqa: E402


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    make_results(root)
    return root


@pytest.fixture(scope="module")
def loaded(results_dir: Path) -> list:  # type: ignore[type-arg]
    runs, bad = load_runs([results_dir])
    assert bad == []
    return runs


def _row(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {"stack": "s", "task": "t", "mode": "free", "model": "m",
                               "audit_flags": "", "sandboxed": True}
    base.update(kw)
    return base


# ---- statistics -----------------------------------------------------------------------------

def test_summary_known_mean_sd_and_small_n() -> None:
    s = summarize([10.0, 20.0, 30.0, 40.0])
    assert (s.n, s.mean) == (4, 25.0)
    assert s.sd == pytest.approx(math.sqrt(500 / 3))  # sample sd of 10..40
    assert s.ci_low is not None and s.ci_high is not None
    assert 10.0 <= s.ci_low < 25.0 < s.ci_high <= 40.0
    one = summarize([7.0, None])
    assert (one.n, one.mean, one.sd, one.ci_low) == (1, 7.0, None, None)
    assert summarize([]).text() == "— (n=0)"
    same = summarize([5.0, 5.0, 5.0])
    assert (same.ci_low, same.ci_high, same.sd) == (5.0, 5.0, 0.0)
    assert summarize([1.0, 2.0, 3.0]).text() == summarize([1.0, 2.0, 3.0]).text()  # seeded
    assert "(n=4)" in s.text()


def test_bootstrap_matches_normal_theory_and_scipy() -> None:
    # 200 draws with sd 10: the mean's 95 % interval is about ±1.96·10/√200 = ±1.39.
    x = np.random.default_rng(1).normal(50.0, 10.0, 200)
    lo, hi = bootstrap_ci(x, seed=3, n_resamples=4000)
    half = 1.96 * x.std(ddof=1) / math.sqrt(x.size)
    assert lo == pytest.approx(x.mean() - half, abs=0.2)
    assert hi == pytest.approx(x.mean() + half, abs=0.2)
    scipy_stats = pytest.importorskip("scipy.stats")
    small = [12.0, 15.0, 9.0, 30.0, 22.0, 18.0]
    ref = scipy_stats.bootstrap((small,), np.mean, method="percentile", n_resamples=20_000,
                                random_state=0).confidence_interval
    lo, hi = bootstrap_ci(small, n_resamples=20_000)
    assert lo == pytest.approx(ref.low, abs=0.4) and hi == pytest.approx(ref.high, abs=0.4)
    with pytest.raises(ValueError):
        bootstrap_ci([1.0])


def test_policy_decides_what_counts() -> None:
    clean, dirty, loose = _row(best=10.0), _row(best=90.0, audit_flags="contamination"), \
        _row(best=50.0, sandboxed=False)
    rows = [clean, _row(best=20.0), dirty, loose]
    [cell] = aggregate(rows)  # default: shown, marked, excluded from means
    assert cell.stats["best"].mean == 15.0 and cell.stats["best"].n == 2
    assert len(cell.runs) == 4 and len(cell.excluded) == 2
    assert cell.mark_text() == "contamination×1, unsandboxed×1"
    [cell] = aggregate(rows, Policy(audit="include", unsandboxed="include"))
    assert cell.stats["best"].mean == pytest.approx(42.5) and cell.stats["best"].n == 4
    [cell] = aggregate(rows, Policy(audit="drop", unsandboxed="include"))
    assert len(cell.runs) == 3 and cell.stats["best"].mean == pytest.approx(80 / 3)
    assert "excluded from means" in Policy().describe()
    with pytest.raises(A2RLError, match="unknown"):
        Policy(audit="maybe")  # type: ignore[arg-type]


def test_runs_the_harness_did_not_finish_are_marked_and_never_counted() -> None:
    # A sweep retries a killed cell as a new run: the dead run (closed as harness_died) lies
    # beside its retry in DIR/runs. Its zero submissions and missing best are no result.
    done = _row(status="finished", best=30.0, submissions=2, valid_rate=1.0)
    dead = _row(status="failed", best=None, submissions=0, valid_rate=None)
    live = _row(status="running", best=None, submissions=1)
    imported = _row(best=50.0, submissions=4)  # no status column: its harness reported a result
    for policy in (Policy(), Policy(audit="include", unsandboxed="include")):
        [cell] = aggregate([done, dead, live, imported], policy)
        assert len(cell.runs) == 4 and len(cell.counted) == 2
        assert cell.stats["submissions"].mean == 3.0 and cell.stats["submissions"].n == 2
        assert cell.stats["best"].mean == 40.0
        assert cell.mark_text() == "harness-failed×1, unfinished×1"
    assert not Policy().counted(dead) and Policy().counted(done)
    assert "never counted" in Policy().describe()


def test_cells_group_by_stack_task_mode_model() -> None:
    rows = [_row(stack="a", best=1.0, improvement=0.5, valid_rate=1.0, submissions=2),
            _row(stack="a", best=3.0, improvement=1.5, valid_rate=0.5, submissions=4),
            _row(stack="b", best=9.0), _row(stack="a", mode="sft-only", best=4.0)]
    cells = aggregate(rows)
    assert [(c.key["stack"], c.key["mode"], c.stats["best"].n) for c in cells] == [
        ("a", "free", 2), ("a", "sft-only", 1), ("b", "free", 1)]
    a = cells[0].row()
    assert (a["best_mean"], a["improvement_mean"], a["valid_rate_mean"], a["submissions_mean"]) \
        == (2.0, 1.0, 0.75, 3.0)
    assert a["best_sd"] == pytest.approx(math.sqrt(2)) and a["runs"] == 2
    assert a["time_to_best_s_n"] == 0 and a["time_to_best_s_mean"] is None


# ---- loading ---------------------------------------------------------------------------------

def test_a_cell_whose_runs_disagree_on_provenance_says_so() -> None:
    same = [_row(best=10.0, agent_cli_version="2.0.1", driver_model="m-1"),
            _row(best=20.0, agent_cli_version="2.0.1", driver_model="m-1", a2rl_version=None)]
    [cell] = aggregate(same)
    assert cell.mixed_provenance() == {} and cell.mark_text() == ""
    mixed = [*same, _row(best=30.0, agent_cli_version="2.0.7", driver_model="m-2")]
    [cell] = aggregate(mixed)
    assert cell.mixed_provenance() == {"agent_cli_version": 2, "driver_model": 2}
    assert cell.mark_text() == ("mixed agent_cli_version: 2 values, "
                                "mixed driver_model: 2 values")
    assert cell.stats["best"].n == 3  # a mark, not an exclusion


def test_rows_from_a2rl_and_imported_runs(loaded: list, results_dir: Path) -> None:  # type: ignore[type-arg]
    rows = {r["run_id"]: r for r in (run_row(x) for x in loaded)}
    assert len(rows) == 10
    failed = rows["20260301-170000-opencode-a"]
    assert (failed["status"], failed["best"], failed["submissions"], failed["route"]) == (
        "failed", None, 0, None)
    cc = rows["20260301-110000-cc-a"]
    assert (cc["stack"], cc["driver"], cc["level"], cc["best"], cc["improvement"]) == (
        "claude-code · claude-sonnet-4-5", "claude-sonnet-4-5", "L1", 60.0, 50.0)
    assert (cc["submissions"], cc["valid_submissions"], cc["valid_rate"]) == (3, 2, 2 / 3)
    assert cc["first_strategy"] == "full SFT" and cc["strategy_changes"] == 2
    assert rows["20260301-120000-cc-b"]["audit_flags"] == "contamination"
    assert rows["20260301-150000-codex-b"]["sandboxed"] is False
    ptb = next(r for r in rows.values() if r["imported"] == "posttrainbench")
    assert (ptb["task"], ptb["level"], ptb["best"], ptb["baseline"]) == ("gsm8k", "L1", 64.82, 58.0)
    subs = submission_rows(next(x for x in loaded if x.record.run_id == "20260301-110000-cc-a"))
    assert [(s["score"], s["best_so_far"], s["route"]) for s in subs] == [
        (20.0, 20.0, "SFT-only"), (None, 20.0, "GRPO"), (60.0, 60.0, "SFT+RL")]
    # one usage event of 44k tokens per 300 s from t=0: at 900 s four have arrived
    assert subs[0]["tokens"] == 4 * 44_000


def test_discovery_skips_workspaces_and_reports_damage(tmp_path: Path, results_dir: Path) -> None:
    import shutil

    src = results_dir / "runs" / "arith" / "20260301-090000-ref-a"
    run = tmp_path / "runs" / "arith" / "r1"
    shutil.copytree(src, run)
    # a run.json the agent planted in its workspace is not a run
    shutil.copy(run / "run.json", run / "workspace" / "run.json")
    (tmp_path / "runs" / "arith" / "broken").mkdir()
    (tmp_path / "runs" / "arith" / "broken" / "run.json").write_text("{not json")
    runs, bad = load_runs([tmp_path])
    assert [r.path for r in runs] == [run]
    assert [p.name for p, _ in bad] == ["broken"]
    with pytest.raises(A2RLError, match="does not exist"):
        load_runs([tmp_path / "nowhere"])


# ---- strategy tables -------------------------------------------------------------------------

def test_strategy_tables(loaded: list) -> None:  # type: ignore[type-arg]
    conv = {c["group"]: c for c in convergence(loaded)}
    assert conv["claude-code · claude-sonnet-4-5"]["C_G"] == 1.0
    assert conv["claude-code · claude-sonnet-4-5"]["marks"] == "contamination×1"
    assert conv["codex · gpt-5"]["C_G"] == 0.5  # PEFT once, RL once
    rates = {c["group"]: c for c in change_rates(loaded)}
    # reference: ref-a 1 change in 2 pairs, ref-b 1 in 1, ref-c no pair → pooled 2/3
    ref = rates["reference"]
    assert (ref["adjacent_pairs"], ref["strategy_changes"]) == (3, 2)
    assert ref["R_change"] == pytest.approx(2 / 3) and ref["R_persist"] == pytest.approx(1 / 3)
    assert rates["codex · gpt-5"]["R_change"] == 0.0
    phases = {(p["group"], p["phase"]): p for p in phase_distribution(loaded)}
    # reference runs: ref-a 1200/1800, ref-b 1400/1800, ref-c 800/900 in SFT
    assert phases[("reference", "SFT")]["share_mean"] == pytest.approx(
        (1200 / 1800 + 1400 / 1800 + 800 / 900) / 3)
    assert phases[("reference", "SFT")]["n"] == 3
    methods = {m["method"]: m for m in methods_attempted_adopted(loaded)}
    assert (methods["DPO"]["attempted"], methods["DPO"]["adopted"]) == (1, 0)
    assert methods["SFT"]["attempted"] == 8
    ws = {w["group"]: w for w in workspace_stats(loaded)}
    assert ws["reference"]["submissions_mean"] == pytest.approx(5 / 3)
    assert ws["reference"]["submissions_n"] == 3
    # drop removes the flagged run from the behaviour tables too
    dropped = {c["group"]: c for c in convergence(loaded, Policy(audit="drop"))}
    assert dropped["claude-code · claude-sonnet-4-5"]["runs"] == 2


# ---- export and CLI --------------------------------------------------------------------------

def test_export_csv_and_parquet_read_by_pandas(results_dir: Path, tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    written = export_results([results_dir], tmp_path / "results.csv")
    assert [p.name for p, _ in written] == ["results.csv", "results.submissions.csv",
                                            "results.cells.csv"]
    runs = pd.read_csv(tmp_path / "results.csv")
    assert len(runs) == 10 and set(runs["counted"]) == {True, False}
    # the run whose harness failed in setup is listed, never counted
    assert not runs.set_index("run_id").loc["20260301-170000-opencode-a", "counted"]
    subs = pd.read_csv(tmp_path / "results.submissions.csv")
    assert len(subs) == 16 and subs.groupby("run_id")["best_so_far"].max().max() == 64.82
    cells = pd.read_csv(tmp_path / "results.cells.csv")
    ref = cells[(cells["stack"] == "reference") & (cells["task"] == "arith")].iloc[0]
    assert (ref["best_n"], ref["best_mean"]) == (2, 45.0)
    pytest.importorskip("pyarrow")
    export_results([results_dir], tmp_path / "r.parquet", cells=False)
    assert len(pd.read_parquet(tmp_path / "r.parquet")) == 10
    with pytest.raises(A2RLError, match="format"):
        export_results([results_dir], tmp_path / "r.xlsx")


def test_runs_list_json_and_csv(results_dir: Path) -> None:
    cli = CliRunner()
    out = cli.invoke(app, ["runs", "list", "--runs-dir", str(results_dir / "runs"), "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert len(rows) == 10 and {"task", "agent", "driver", "mode", "model", "study", "status",
                               "baseline", "best", "improvement", "submissions",
                               "duration_s"} <= set(rows[0])
    out = cli.invoke(app, ["runs", "list", "--runs-dir", str(results_dir / "runs"), "--csv"])
    assert out.exit_code == 0 and out.stdout.splitlines()[0].startswith("run_id,")
    assert len(out.stdout.splitlines()) == 11


def test_a_sweeps_runs_carry_its_task_and_agent_labels(tmp_path: Path) -> None:
    # Two entries of one task (arith with two generators) are two columns, each against its
    # own baseline; a named `cmd:` agent is its row under its matrix name; an unnamed one keeps
    # the hash of its command line. Found by a real sweep: its `honest-script` row read
    # `cmd:1f0c…`, and the end-to-end matrix's arith-mul runs were pooled with arith's.
    sweep = tmp_path / "sweep"
    cmd = "cmd:python code/honest.py"
    runs = [("20260302-090000-a", "arith", "honest", 20.0, 30.0),
            ("20260302-091000-b", "arith-mul", "honest", 60.0, 50.0),
            ("20260302-092000-c", "arith", "cmd", 20.0, 25.0)]
    for run_id, label, agent_label, base, best in runs:
        write_run(sweep / "runs", Spec(run_id, "arith", cmd if agent_label != "cmd" else
                                       cmd + " --other", None, "free", base,
                                       [(600, best, "SFT-only", ["SFT"])]))
        cell = sweep / "cells" / run_id[-1] / "cell.json"
        cell.parent.mkdir(parents=True)
        cell.write_text(json.dumps({"id": run_id[-1], "spec": {
            "task_label": label, "agent_label": agent_label, "driver_label": "default"},
            "attempts": [{"run_id": run_id}]}))
    (sweep / "sweep.json").write_text("{}")
    loaded, bad = load_runs([sweep / "runs"])
    assert bad == []
    rows = {r["run_id"]: r for r in (run_row(x) for x in loaded)}
    a, b, c = (rows[r[0]] for r in runs)
    assert (a["task"], a["task_name"], a["stack"]) == ("arith", "arith", "honest")
    assert (b["task"], b["task_name"], b["stack"]) == ("arith-mul", "arith", "honest")
    assert c["stack"].startswith("cmd:") and len(c["stack"]) == 12
    cells = {(x.key["stack"], x.key["task"]): x for x in aggregate(rows.values())}
    assert cells[("honest", "arith-mul")].stats["best"].mean == 50.0
    assert cells[("honest", "arith")].stats["best"].mean == 30.0
    assert {s["task"] for s in submission_rows(loaded[1])} == {"arith-mul"}
    # the same run outside a sweep directory keeps its own names
    (sweep / "sweep.json").unlink()
    plain = run_row(load_runs([sweep / "runs"])[0][1])
    assert plain["task"] == "arith" and plain["stack"].startswith("cmd:")


def test_hidden_final_score_is_the_result(loaded: list) -> None:  # type: ignore[type-arg]
    from dataclasses import replace

    from a2rl.schema import FinalResult

    run = next(x for x in loaded if x.record.run_id == "20260301-100000-ref-b")
    final = FinalResult(mode="hidden", status="scored", submission_id="s0002", record_id="t0001",
                        chosen_by="best_dev", model_path="output/v2", dev_score=50.0,
                        dev_baseline=10.0, score=41.0, test_baseline=11.0, improvement=30.0)
    row = run_row(replace(run, record=run.record.model_copy(update={"final": final})))
    assert (row["best"], row["improvement"]) == (50.0, 40.0)  # the dev feedback
    assert (row["result"], row["result_improvement"], row["final"]) == (41.0, 30.0, 41.0)
    plain = run_row(run)
    assert (plain["result"], plain["result_improvement"]) == (50.0, 40.0)


def test_stack_labels(loaded: list) -> None:  # type: ignore[type-arg]
    from a2rl.results import agent_stack

    rec = loaded[0].record
    cmd = rec.model_copy(update={"config": rec.config.model_copy(update={"agent": "cmd:./a.sh"})})
    other = rec.model_copy(update={"config": rec.config.model_copy(update={"agent": "cmd:./b.sh"})})
    assert agent_stack(cmd).startswith("cmd:") and len(agent_stack(cmd)) == 12
    assert agent_stack(cmd) == agent_stack(cmd.model_copy()) != agent_stack(other)
    assert agent_stack(rec) == "reference"
