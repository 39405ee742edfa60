"""What a run costs: the dated price table, tokens and dollars from the agent's events, GPU-hours,
the sampler (and what it says when there is no GPU or no NVML), the run folder's size, the
summary section and export columns, provenance, and --cost-limit (refused without a parser;
the supervisor stops the agent with its own exit reason; a real Claude Code run stops at the
response that crosses it)."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from a2rl._errors import A2RLError
from a2rl._walk import rmtree
from a2rl.agents import get_agent
from a2rl.agents.claude_code import ClaudeCodeAgent
from a2rl.agents.codex import CodexAgent
from a2rl.agents.gemini import GeminiAgent
from a2rl.agents.opencode import OpenCodeAgent
from a2rl.agents.openhands import OpenHandsAgent
from a2rl.capture import (
    NO_GPU,
    NO_NVML,
    ResourceSampler,
    ResourceSamples,
    agent_cost,
    close_cost,
    data_fingerprint,
    disk_bytes,
    driver_model,
    eval_gpu_hours,
    gpu_hours,
    llm_spend,
    unpriced_tail,
    visible_gpus,
)
from a2rl.capture._cost import open_gpu_reader
from a2rl.extensions.summary._cost import HEADING, render_cost
from a2rl.results._export import cost_columns
from a2rl.runner._spend import CostWatch, agent_spend, check_cost_limit, has_parser, running_spend
from a2rl.runner._supervise import AgentProcess
from a2rl.schema import (
    PRICES,
    PRICES_DATE,
    AgentEvent,
    Provenance,
    RunConfig,
    RunCost,
    RunRecord,
    SubmissionRecord,
    model_key,
    price_for,
)

SONNET_4_5 = PRICES["claude-sonnet-4-5"]


def assert_cost_is_the_clis(record: RunRecord, events: list[AgentEvent]) -> None:
    """For the real CLI runs against the scripted servers (tests/agents/test_agent_*.py): run.json's
    tokens and dollars are the CLI's own totals, and its provenance names the CLI as it ran."""
    cost, prov = record.cost, record.provenance
    assert cost is not None and prov is not None
    usage = [e for e in events if e.kind == "usage"]
    assert (cost.input_tokens, cost.output_tokens) == \
        (sum(e.input_tokens or 0 for e in usage), sum(e.output_tokens or 0 for e in usage))
    dollars = [e.cost_usd for e in usage if e.cost_usd is not None]
    if dollars:  # the CLI priced its responses: its total, nothing added
        assert cost.usd_source == "cli" and cost.usd == pytest.approx(sum(dollars), abs=1e-6)
    else:  # it priced none, and the scripted model is in no price table
        assert cost.usd is None and cost.usd_source is None
    assert cost.gpus == visible_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"))
    assert cost.agent_gpu_hours == gpu_hours(cost.gpus, 0) or cost.gpus > 0
    assert cost.disk_bytes and cost.disk_bytes > 0 and cost.peak_rss_mb
    assert cost.gpu_note or cost.gpu_util_mean is not None
    pinned = re.split(r"@|==", record.agent_package or "")[-1]
    assert pinned and prov.agent_cli_version and pinned in prov.agent_cli_version, \
        (record.agent_package, prov.agent_cli_version)
    assert prov.a2rl_version == record.versions.get("a2rl-bench")
    assert prov.task_data_sha256 and re.fullmatch(r"[0-9a-f]{64}", prov.task_data_sha256)


# ---- the price table -------------------------------------------------------------------------
def test_price_table_is_dated_sourced_and_prices_every_default_driver() -> None:
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", PRICES_DATE)
    for name, price in PRICES.items():
        assert price.source.startswith("https://"), name
        assert 0 < price.cached_input <= price.input < price.output, name
        assert model_key(name) == name  # every key is already in the lookup's form
    for cls in (ClaudeCodeAgent, CodexAgent, OpenCodeAgent, GeminiAgent, OpenHandsAgent):
        assert price_for(cls.default_driver) is not None, cls.default_driver


def test_model_names_are_matched_exactly_after_normalising() -> None:
    assert price_for("anthropic/claude-sonnet-4-5-20250929") == SONNET_4_5  # OpenHands' form
    assert price_for("openrouter/anthropic/claude-sonnet-4.5") == SONNET_4_5
    assert price_for("Claude-Sonnet-4-5-latest") == SONNET_4_5
    assert price_for("gpt-6.2-sol") == PRICES["gpt-6.2-sol"]  # OpenAI keeps its dots
    # never a guess from a near name: a cheaper sibling is not priced as its big brother
    assert price_for("gpt-5-mini") is None and price_for("scripted-model") is None
    assert price_for(None) is None and price_for("") is None


def test_price_arithmetic_with_cached_tokens() -> None:
    # 1M prompt tokens of which 800k cached, 100k out at $3 / $0.30 / $15 per million
    assert SONNET_4_5.usd(1_000_000, 100_000, 800_000) == pytest.approx(0.6 + 0.24 + 1.5)
    assert SONNET_4_5.usd(10, 0, 50) == pytest.approx(10 * 0.30 / 1e6)  # cache ≤ prompt


# ---- tokens and dollars ----------------------------------------------------------------------
def _usage(tokens_in: int, tokens_out: int, cost: float | None = None,
           **extra: str) -> AgentEvent:
    return AgentEvent(kind="usage", turn=0, t_s=0.0, input_tokens=tokens_in,
                      output_tokens=tokens_out, cost_usd=cost, extra=extra)


def _config(**fields: object) -> RunConfig:
    base: dict[str, object] = dict(task="arith", agent="codex", model="m", mode="free",
                                   budget_s=60, sandbox="bwrap", eval_timeout_s=60, grace_s=1,
                                   port=0, runs_dir="/tmp")
    base.update(fields)
    return RunConfig(**base)  # type: ignore[arg-type]


def test_cli_dollars_win_and_an_unpriced_tail_is_priced_from_the_table() -> None:
    # a Claude Code round: two responses, then its result with the round's dollars
    events = [_usage(1000, 50, model="claude-sonnet-4-5"), _usage(1200, 60),
              _usage(0, 0, 0.0123)]
    assert unpriced_tail(events) == (tail := unpriced_tail([])) and tail.input_tokens == 0
    assert running_spend(events, "claude-sonnet-4-5") == 0.0123
    cost, reported = agent_spend(_config(agent="claude-code"), get_agent("claude-code"), events,
                                 agent_s=1, samples=ResourceSamples())
    assert (cost.input_tokens, cost.output_tokens, cost.usd, cost.usd_source) == \
        (2200, 110, 0.0123, "cli")
    assert reported == "claude-sonnet-4-5"
    # a second round cut off before its result: its response is priced from the table
    events.append(_usage(2000, 100, cache_read_input_tokens="1500"))
    assert (unpriced_tail(events).input_tokens, unpriced_tail(events).cached_tokens) == \
        (2000, 1500)
    priced = SONNET_4_5.usd(2000, 100, 1500)
    assert llm_spend(0.0123, unpriced_tail(events), "claude-sonnet-4-5") == \
        (round(0.0123 + priced, 6), f"cli+prices:{PRICES_DATE}")
    assert llm_spend(0.0123, unpriced_tail(events), "unknown-model") == \
        (0.0123, "cli (last responses unpriced)")


def test_a_cli_without_dollars_is_priced_and_an_unknown_model_stays_unknown() -> None:
    events = [_usage(5000, 300, cached_input_tokens="4000"), _usage(6000, 200)]  # Codex
    price = PRICES["gpt-6.2-sol"]
    # no model in Codex's events: its driver (--driver, else the CLI's default) is priced
    cost, reported = agent_spend(_config(), get_agent("codex"), events, agent_s=1,
                                 samples=ResourceSamples())
    assert reported is None and CodexAgent.default_driver == "gpt-6.2-sol"
    assert (cost.usd, cost.usd_source) == \
        (round(price.usd(11000, 500, 4000), 6), f"prices:{PRICES_DATE}")
    cost, _ = agent_spend(_config(driver="scripted-model"), get_agent("codex"), events,
                          agent_s=1, samples=ResourceSamples())
    assert (cost.input_tokens, cost.output_tokens, cost.usd, cost.usd_source) == \
        (11000, 500, None, None)
    # no usage events at all (or no parser): tokens unknown, not zero
    for none in ([], None):
        cost, _ = agent_spend(_config(), get_agent("codex"), none, agent_s=1,
                              samples=ResourceSamples())
        assert cost.input_tokens is None and cost.usd is None


def test_driver_model_is_the_one_the_provider_reported_most() -> None:
    turn = AgentEvent(kind="turn", turn=0, t_s=0.0, extra={"model": "claude-sonnet-4-5-20250929"})
    side = AgentEvent(kind="turn", turn=1, t_s=1.0, extra={"model": "claude-haiku-4-5"})
    assert driver_model([turn, turn.model_copy(), side]) == "claude-sonnet-4-5-20250929"
    assert driver_model([_usage(1, 1, models="gemini-3.1-pro-preview")]) == \
        "gemini-3.1-pro-preview"
    assert driver_model([_usage(1, 1, models="a,b")]) is None  # several: not one driver
    forged = AgentEvent(kind="turn", turn=0, t_s=0.0, extra={"model": "m\n\x1b[2J" + "x" * 500})
    assert driver_model([forged]) == "m[2J" + "x" * 196  # the CLI's text: printable, capped


# ---- GPU-hours -------------------------------------------------------------------------------
def test_visible_gpus_and_gpu_hours(tmp_path: Path) -> None:
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"):
        (tmp_path / name).touch()
    assert visible_gpus(None, tmp_path) == 2  # every device; control nodes are not GPUs
    assert visible_gpus("1", tmp_path) == 1
    assert visible_gpus("0,1,2,3", tmp_path) == 2  # never more than the machine has
    assert visible_gpus("", tmp_path) == visible_gpus("-1", tmp_path) == 0
    assert visible_gpus(None, tmp_path / "empty") == 0
    assert gpu_hours(2, 5400) == 3.0 and gpu_hours(0, 5400) == 0.0
    now = dt.datetime.now(dt.UTC)

    def sub(seconds: float, cached: bool = False) -> SubmissionRecord:
        return SubmissionRecord(id="v", seq=1, model_path="output/v1", received_at=now,
                                status="scored", eval_seconds=seconds, cached=cached,
                                baseline=10.0, task_fingerprint="hmac:x")

    # two evaluations of 30 and 60 min on 4 GPUs; a cached one took no GPU time
    assert eval_gpu_hours([sub(1800), sub(3600), sub(3600, cached=True)], 4) == 6.0
    cost = agent_cost(None, unpriced_tail([]), None, agent_s=7200,
                      samples=ResourceSamples(gpus=2))
    assert cost.agent_gpu_hours == 4.0 and cost.gpus == 2
    assert RunCost(agent_gpu_hours=4.0, eval_gpu_hours=6.0).gpu_hours == 10.0


# ---- the sampler -----------------------------------------------------------------------------
def test_sampler_says_plainly_when_there_is_no_gpu_or_no_nvml(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(40 << 20); "
                             "time.sleep(30)"])
    try:
        time.sleep(0.5)
        sampler = ResourceSampler(pid=proc.pid, gpus=0, gpu_note=NO_GPU, every_s=0.05).start()
        time.sleep(0.3)
        samples = sampler.stop()
    finally:
        proc.kill()
        proc.wait()
    assert samples.gpu_note == NO_GPU and samples.gpu_util_mean is None
    assert samples.gpu_mem_peak_mb is None
    assert samples.peak_rss_source in ("sampled RSS", "cgroup memory.peak")
    assert samples.peak_rss_mb is not None and samples.peak_rss_mb >= 40  # the child's buffer
    assert sampler.stop() is samples  # a second stop says the same
    # a backend whose agent is not the harness's child (podman): said, not measured wrong
    unseen = ResourceSampler(pid=os.getpid(), gpus=0, gpu_note=NO_GPU, every_s=0.05,
                             memory_note="not measured (podman)").start().stop()
    assert unseen.peak_rss_mb is None and unseen.peak_rss_source == "not measured (podman)"
    # GPUs but neither an NVML binding nor a working nvidia-smi
    broken = tmp_path / "nvidia-smi"
    broken.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    broken.chmod(0o755)
    assert open_gpu_reader("0", smi=str(broken), use_nvml=False) == (None, NO_NVML)
    assert NO_NVML == "no NVML on this machine: GPU use not sampled"


def test_sampler_reads_nvidia_smi_figures_of_the_agents_gpus(tmp_path: Path) -> None:
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nprintf '0, 90, 1000\\n1, 10, 3000\\n2, 50, 500\\n'\n")
    smi.chmod(0o755)
    reader, note = open_gpu_reader("0,1", smi=str(smi), use_nvml=False)
    assert reader is not None and note is None
    sampler = ResourceSampler(pid=os.getpid(), gpus=2, reader=reader)
    sampler.sample()
    sampler.sample()
    samples = sampler.stop()
    assert samples.gpu_util_mean == 50.0  # GPUs 0 and 1 only
    assert samples.gpu_mem_peak_mb == 4000.0 and samples.gpu_note is None


# ---- the close -------------------------------------------------------------------------------
def test_disk_bytes_count_a_shared_blob_once_and_follow_no_link(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "blob").write_bytes(b"x" * 1000)
    os.link(tmp_path / "blob", tmp_path / "same-blob")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f").write_bytes(b"y" * 10)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "big").write_bytes(b"z" * 100_000)
    (tmp_path / "link").symlink_to(outside, target_is_directory=True)
    deep = tmp_path / "deep"
    deep.mkdir()
    monkeypatch.chdir(deep)  # an agent's `mkdir -p a/a/a/…` 1,100 levels down
    for _ in range(1100):
        os.mkdir("a")
        os.chdir("a")
    Path("leaf").write_bytes(b"q" * 7)
    os.chdir(tmp_path)
    try:  # no RecursionError; the leaf lies deeper than the walk goes
        assert disk_bytes(tmp_path) == 1000 + 10 + len(str(outside))
    finally:
        shutil.rmtree(outside)
        rmtree(deep)  # pytest's own clean-up recurses per level


def _record(**fields: object) -> RunRecord:
    return RunRecord(run_id="r", status="finished", created_at=dt.datetime.now(dt.UTC),
                     config=_config(), versions={}, sandboxed=True,
                     **fields)  # type: ignore[arg-type]


def test_close_adds_the_evaluations_and_the_run_folder(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{}")
    record = _record(cost=RunCost(input_tokens=5, gpus=1, agent_gpu_hours=0.5))
    cost = close_cost(record, tmp_path)
    assert cost.input_tokens == 5 and cost.agent_gpu_hours == 0.5
    assert cost.eval_gpu_hours == 0.0  # no engine recorded: evaluations on no GPU
    assert cost.disk_bytes == 2
    assert close_cost(_record(), tmp_path).disk_bytes == 2  # a run whose agent never started


# ---- what is shown ---------------------------------------------------------------------------
def test_summary_section_and_export_columns_keep_agent_text_inert() -> None:
    hostile = "1.0`\n## Forged\n<script>alert(1)</script>"
    record = _record(
        cost=RunCost(input_tokens=1234, output_tokens=56, usd=0.5, usd_source="cli", gpus=2,
                     agent_gpu_hours=1.5, eval_gpu_hours=0.25, gpu_note=NO_NVML,
                     peak_rss_mb=2048.0, peak_rss_source="sampled RSS", disk_bytes=3 << 20),
        provenance=Provenance(a2rl_version="0.1.0", agent_cli_version=hostile,
                              driver_model="claude-sonnet-4-5-20250929",
                              task_data_sha256="ab" * 32))
    text = render_cost(record)
    assert HEADING in text and "1,234 in / 56 out" in text and "$0.5000 (the CLI's own total)" \
        in text
    assert "GPU-hours: 1.750" in text and NO_NVML in text and "2,048 MiB (sampled RSS)" in text
    # the CLI's version line stays one inline code span: no new heading, no raw markup
    assert [x for x in text.splitlines() if x.startswith("#")] == [HEADING]
    line = next(x for x in text.splitlines() if x.startswith("- Agent CLI version"))
    assert line.count("`") == 2
    cols = cost_columns(record)
    assert cols["cost_usd"] == 0.5 and cols["gpu_hours"] == 1.75 and cols["gpus"] == 2
    assert "driver_model" not in cols  # provenance is a run-row column (results._load)
    assert render_cost(_record()) == "" and cost_columns(_record())["gpu_hours"] is None


def test_data_fingerprint_covers_the_data_and_the_heldout_identity(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "train.jsonl").write_text('{"q": 1}\n')
    (data / "sub" / "more.txt").write_text("x")
    first = data_fingerprint(data, "hmac:aaa")
    assert re.fullmatch(r"[0-9a-f]{64}", first) and first == data_fingerprint(data, "hmac:aaa")
    assert data_fingerprint(data, "hmac:bbb") != first  # another held-out set
    (data / "sub" / "more.txt").write_text("y")
    assert data_fingerprint(data, "hmac:aaa") != first  # other training data
    (data / "elsewhere").symlink_to("/etc/passwd")  # a link is named, never read
    data_fingerprint(data, "hmac:aaa")


# ---- --cost-limit ----------------------------------------------------------------------------
def test_cost_limit_is_refused_for_agents_without_a_parser(tmp_path: Path) -> None:
    from a2rl.runner import run

    for agent in ("cmd:true", "reference"):
        assert not has_parser(get_agent(agent))
        config = RunConfig(task="arith", agent=agent, model="smollm2-135m", mode="free",
                           budget_s=60, sandbox="bwrap", eval_timeout_s=60, grace_s=1, port=0,
                           runs_dir=str(tmp_path / "runs"), cost_limit_usd=1.0)
        with pytest.raises(A2RLError) as err:
            check_cost_limit(config, get_agent(agent))
        assert "transcript parser" in str(err.value) and "drop --cost-limit" in err.value.fix
        with pytest.raises(A2RLError):
            run(config)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("run.json"))
    assert has_parser(get_agent("claude-code"))


def test_the_supervisor_stops_the_agent_at_the_limit(tmp_path: Path) -> None:
    proc = AgentProcess(["sleep", "60"], env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path,
                        transcript=tmp_path / "agent" / "transcript.log")
    calls: list[int] = []

    def reached() -> bool:
        calls.append(1)
        return len(calls) >= 2

    reason, code = proc.supervise(lambda: 1000.0, grace_s=2, limit_reached=reached)
    proc.close()
    assert reason == "cost_limit" and code is not None and proc.proc.poll() is not None


def _stream_response(msg_id: str, prompt: int, out: int, model: str) -> list[str]:
    start = {"type": "stream_event", "session_id": "s", "event": {
        "type": "message_start", "message": {"id": msg_id, "model": model, "content": [],
                                             "usage": {"input_tokens": prompt,
                                                       "output_tokens": 1}}}}
    delta = {"type": "stream_event", "session_id": "s", "api_message_id": msg_id,
             "event": {"type": "message_delta", "usage": {"output_tokens": out}}}
    return [json.dumps(start), json.dumps(delta)]


def test_cost_watch_reads_the_spend_from_the_live_transcript(tmp_path: Path) -> None:
    """Claude Code prices a round only at its end: the responses so far are priced from the
    table (the model the stream names), and the watch says when they reach the limit."""
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    transcript = agent_dir / "transcript.log"
    lines = [json.dumps({"type": "system", "subtype": "init", "session_id": "s", "cwd": "/ws",
                         "model": "claude-sonnet-4-5"})]
    lines += _stream_response("m1", 100_000, 1000, "claude-sonnet-4-5")
    transcript.write_text("\n".join(lines) + "\n")
    one = SONNET_4_5.usd(100_000, 1000)  # $0.315
    watch = CostWatch(ClaudeCodeAgent(), agent_dir, limit_usd=0.5, model="scripted-model",
                      every_s=0.0)
    assert not watch.reached() and watch.spent == pytest.approx(one)
    assert not watch.reached()  # unchanged transcript: not parsed again
    with transcript.open("a") as fh:
        fh.write("\n".join(_stream_response("m2", 110_000, 1000, "claude-sonnet-4-5")) + "\n")
    deadline = time.monotonic() + 30  # a slow parse makes the watch wait longer between reads
    while not watch.reached() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert watch.spent == pytest.approx(one + SONNET_4_5.usd(110_000, 1000))
    assert watch.spent >= watch.limit_usd


@pytest.mark.cli
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")
def test_claude_code_stops_at_the_response_that_crosses_the_limit(
        tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch,
        installed_cli) -> None:  # type: ignore[no-untyped-def]
    """A real Claude Code run against the scripted server with --cost-limit: its first response
    costs less than the limit, the second crosses it (its command waits two minutes, so nothing
    more comes before the watch sees it; Claude Code refuses a bare `sleep`); the run closes
    with exit reason cost_limit and the third response is never asked for."""
    from scripted_llm import Script, Step, create_app
    from scripted_llm._core import run_cli_agent

    from conftest import serve_on_loopback

    installed_cli("claude-code")
    wait = "python -c 'import time; time.sleep(120)'"
    script = Script(plan=(Step("echo first", "Starting."), Step(wait, "Waiting."),
                          Step("echo never", "Never reached."), Step(None, "Done.")))
    # each main response here is ~1000 prompt tokens at $3/M (claude-sonnet-4-5): the limit
    # lies between one response and two
    limit = 1.5 * SONNET_4_5.usd(1100, 30)
    with serve_on_loopback(create_app(script, ["anthropic"])) as port:
        rec, run_dir = run_cli_agent(tmp_path, tiny_model, "claude-code",
                                     f"http://127.0.0.1:{port}", monkeypatch,
                                     key_env="ANTHROPIC_API_KEY", driver="claude-sonnet-4-5",
                                     cost_limit_usd=limit)
    assert rec.exit_reason == "cost_limit", rec.error
    assert rec.status == "finished"
    main_steps = [s.step for s in script.sent if s.main]
    assert main_steps == [0, 1], main_steps  # stopped at the second response, not later
    assert rec.cost is not None and rec.cost.usd is not None and rec.cost.usd >= limit
    assert rec.provenance is not None and rec.provenance.driver_model == "claude-sonnet-4-5"
    assert rec.provenance.agent_cli_version and "2.1" in rec.provenance.agent_cli_version
    assert "reached --cost-limit" not in (rec.error or "")
    assert HEADING in (run_dir / "summary.md").read_text()
