"""Fast checks of the sandbox's parts without a run: the egress proxy's allow-list and log,
console escaping, the transcript reader under hostile output, the backends' start probe and
its error, and the masks' selection."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from a2rl._console import plain_text, safe
from a2rl._errors import A2RLError
from a2rl.agents import get_agent
from a2rl.sandbox import AllowEntry, EgressProxy, Masks, default_allow_list, start_sandbox


def test_allow_entries_parse_and_match() -> None:
    assert AllowEntry.parse("API.example.com") == AllowEntry("api.example.com", None)
    assert AllowEntry.parse("h:8443") == AllowEntry("h", 8443)
    assert AllowEntry.parse("https://x.org/v1") == AllowEntry("x.org", 443)
    wild = AllowEntry.parse("*.example.com")
    assert wild.matches("a.b.example.com", 443) and not wild.matches("example.com.evil", 443)
    assert not wild.matches("evilexample.com", 443)
    assert AllowEntry("h", None).matches("h", 80) and not AllowEntry("h", None).matches("h", 22)
    for bad in ("h:x", "a b", "user@h", "http://"):
        with pytest.raises(A2RLError):
            AllowEntry.parse(bad)


def test_default_allow_list_follows_the_agent_and_driver() -> None:
    claude, codex = (get_agent(n).api_hosts for n in ("claude-code", "codex"))
    assert "api.anthropic.com" in default_allow_list(claude, None, [])
    assert default_allow_list(codex, "https://llm.corp:8443/v1", []) == ["llm.corp:8443"]
    # a loopback driver is relayed, not proxied
    assert default_allow_list(codex, "http://127.0.0.1:8000/v1", ["x.org"]) == ["x.org"]
    assert "pypi.org" in default_allow_list((), None, [], package_indexes=True)


async def _ask(proxy: EgressProxy, request: bytes) -> bytes:
    path = f"/tmp/a2rl-proxy-test-{os.getpid()}-{time.monotonic_ns()}.sock"
    server = await asyncio.start_unix_server(proxy.handle, path=path)
    try:
        reader, writer = await asyncio.open_unix_connection(path)
        writer.write(request)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout=20)
        writer.close()
        return data
    finally:
        server.close()
        os.unlink(path)


def test_proxy_refuses_names_that_resolve_to_local_addresses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An allowed name re-pointed at 127.0.0.1 (DNS rebinding, a hostile /etc/hosts entry) must
    # not open the host's loopback services (other runs' graders).
    import socket

    real = socket.getaddrinfo

    def fake(host: str, *a: object, **k: object) -> list:  # type: ignore[type-arg]
        if host == "api.example.com":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 443))]
        return real(host, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    proxy = EgressProxy(["*.example.com", "example.invalid"], tmp_path / "net.jsonl")
    reply = asyncio.run(_ask(proxy, b"CONNECT api.example.com:443 HTTP/1.1\r\n\r\n"))
    assert b" 403 " in reply.split(b"\r\n")[0]
    reply = asyncio.run(_ask(proxy, b"GET ftp://example.invalid/ HTTP/1.1\r\n\r\n"))
    assert b" 400 " in reply.split(b"\r\n")[0]
    reply = asyncio.run(_ask(proxy, b"\xff\xfe garbage\r\n\r\n"))
    assert b" 400 " in reply.split(b"\r\n")[0]
    proxy.close()
    log = [json.loads(x) for x in (tmp_path / "net.jsonl").read_text().splitlines()]
    assert [e["allowed"] for e in log] == [False, False]
    assert "local address" in log[0]["reason"] and proxy.counts == {"allowed": 0, "denied": 2}


def test_console_text_is_inert() -> None:
    hostile = "\x1b[2K\x1b[1A\x1b[32m✔ s0999\x1b[0m score\r\n\x07\x1b]0;t\x07 \u202e[bold]x[/]"
    clean = plain_text(hostile)
    assert "\x1b" not in clean and "\r" not in clean and "\n" not in clean and "\u202e" not in clean
    assert "✔ s0999" in clean
    from rich.console import Console

    console = Console(record=True, width=200, force_terminal=False)
    console.print(f"[dim]{safe('[/dim][green]✔ s0999[/] score 100')}[/]")
    assert console.export_text().strip() == "[/dim][green]✔ s0999[/] score 100"


def test_reader_survives_hostile_output(tmp_path: Path) -> None:
    from a2rl.runner import AgentProcess

    script = tmp_path / "flood.py"
    script.write_text(
        "import sys\n"
        "o = sys.stdout.buffer\n"
        "o.write(b'[/x][bold red]\\xff\\xfe\\x1b[1A markup\\n')\n"
        "o.write(b'B' * (20 << 20))\n"  # 20 MB with no newline: more than any pipe buffer
        "o.write(b'\\nTAIL\\n'); o.flush()\n")
    seen: list[str] = []

    def echo(text: str) -> None:
        seen.append(text)
        if len(seen) == 1:
            raise ValueError("a broken echo must not stop the reader")

    proc = AgentProcess([sys.executable, str(script)], env=dict(os.environ), cwd=tmp_path,
                        transcript=tmp_path / "t.log", echo=echo)
    reason, code = proc.supervise(lambda: 120.0, grace_s=1)
    proc.close()
    assert (reason, code) == ("agent_exited", 0)
    data = (tmp_path / "t.log").read_bytes()
    assert data.endswith(b"TAIL\n") and data.count(b"B") == 20 << 20
    assert seen[-1] == "TAIL" and all("\x1b" not in s and len(s) <= 2000 for s in seen)


def _fake(dir_: Path, name: str, body: str) -> None:
    exe = dir_ / name
    exe.write_text("#!/bin/sh\n" + body + "\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)


def test_a_backend_that_cannot_start_says_what_failed_and_the_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(tmp_path, "bwrap", "echo 'bwrap: No permissions to create new namespace' >&2; exit 1")
    _fake(tmp_path, "podman", "echo 'Error: cannot set up namespace using newuidmap' >&2; exit 125")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.delenv("A2RL_PODMAN_OPTIONS", raising=False)
    with pytest.raises(A2RLError) as err:
        start_sandbox("bwrap")
    msg = err.value.message
    assert "No permissions to create new namespace" in msg and "newuidmap" in msg
    assert "unprivileged_userns_clone" in (err.value.fix or "")
    with pytest.raises(A2RLError) as err:
        start_sandbox("podman")
    assert "podman sandbox cannot start" in err.value.message
    assert "/etc/subuid" in (err.value.fix or "") and "--no-sandbox" in (err.value.fix or "")


def test_masks_keep_only_what_a_backend_mounts(tmp_path: Path) -> None:
    mounted, ws = tmp_path / "venv", tmp_path / "ws"
    (mounted / "pkg" / "data").mkdir(parents=True)
    (mounted / "pkg" / "data" / "keep.json").write_text("{}")
    (mounted / "f.jsonl").write_text("")
    ws.mkdir()
    m = Masks(dirs=[mounted / "pkg" / "data", mounted / "pkg" / "data" / "sub",
                    tmp_path / "elsewhere", ws / "x"],
              files=[mounted / "f.jsonl", mounted / "pkg" / "data" / "y.json"],
              reveal=[mounted / "pkg" / "data" / "keep.json", mounted / "loose.json"])
    kept = m.under([mounted], exclude=[ws])
    assert kept.dirs == [mounted / "pkg" / "data"]
    assert kept.files == [mounted / "f.jsonl"]
    assert kept.reveal == [mounted / "pkg" / "data" / "keep.json"]


def test_run_reports_escape_agent_text_and_flag_a_shared_network(tmp_path: Path) -> None:
    """`a2rl runs show/list`: a submission path or error written by the agent is shown as
    text, and network full is flagged."""
    import datetime as dt

    from rich.console import Console

    from a2rl.cli._show import list_runs, show_run
    from a2rl.schema import RunConfig, RunRecord, SubmissionRecord

    now = dt.datetime.now(dt.UTC)
    hostile = "output/x[/]\n[bold green]✔ s0999[/] score 100.00\x1b[1A"
    sub = SubmissionRecord(id="s0001", seq=1, received_at=now, model_path=hostile, status="failed",
                           baseline=0.0, error="[red]fake[/red] \x1b[2Kscored 100",
                           task_fingerprint="f")
    config = RunConfig(task="arith", agent="cmd:true", model="m", mode="free", budget_s=1,
                       sandbox="bwrap", eval_timeout_s=1, grace_s=1, port=0,
                       runs_dir=str(tmp_path), network="full")
    record = RunRecord(run_id="r1", status="finished", created_at=now, config=config,
                       versions={}, sandboxed=True, submissions=[sub], flags=["network_full"])
    console = Console(record=True, width=300, force_terminal=False)
    show_run(record, console)
    text = console.export_text()
    assert "\x1b" not in text and "[bold green]✔ s0999[/]" in text
    assert "[red]fake[/red]" in text and "network full (host network shared)" in text
    (tmp_path / "arith" / "r1").mkdir(parents=True)
    (tmp_path / "arith" / "r1" / "run.json").write_text(record.model_dump_json())
    console = Console(record=True, width=300, force_terminal=False)
    list_runs(tmp_path, console)
    assert "net full" in console.export_text()
