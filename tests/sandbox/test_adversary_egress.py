"""Hostile use of the egress proxy and of the sandbox's resources, against the real components:
every spelling of the host's loopback through the proxy (CONNECT and plain HTTP), the
process, memory and file-size limits inside the bwrap and podman sandboxes (a bounded fork
bomb, an oversized file), and a forged harness line in the echoed agent output."""

from __future__ import annotations

import asyncio
import io
import json
import re
import shutil
import socket
import socketserver
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from a2rl._errors import A2RLError
from a2rl.runner import AgentProcess, run
from a2rl.sandbox import EgressProxy, Masks, get_sandbox
from a2rl.sandbox._host import gpu_devices
from a2rl.sandbox._limits import Limits
from a2rl.sandbox._proxy import choose_address
from a2rl.schema import RunConfig
from conftest import TINY_TASK

# The host's loopback (and the unspecified address, which connects to it) as an agent may
# write it: IPv6, IPv4-mapped IPv6, and the numeric forms inet_aton accepts.
SPELLINGS = ("127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]", "2130706433",
             "0x7f000001", "0177.0.0.1", "127.1", "0.0.0.0", "0")
REACHED = b"TARGET-REACHED"


class _Target(socketserver.ThreadingTCPServer):
    """A loopback service standing for another run's grader: counts who got through."""

    daemon_threads = True
    allow_reuse_address = True
    hits = 0


class _Answer(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.server.hits += 1  # type: ignore[attr-defined]
        self.request.recv(4096)
        self.request.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                             % (len(REACHED), REACHED))


@pytest.fixture
def target() -> Iterator[_Target]:
    server = _Target(("127.0.0.1", 0), _Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


class _ProxyOnLoopback:
    """The real proxy served on a loopback TCP port from its own event loop."""

    def __init__(self, proxy: EgressProxy) -> None:
        self.proxy = proxy
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(proxy.handle, "127.0.0.1", 0), self.loop).result(10)
        self.port = self.server.sockets[0].getsockname()[1]

    def ask(self, request: bytes, then: bytes = b"") -> bytes:
        """The proxy's reply to `request`; with `then`, also what comes back through the
        tunnel after sending `then` into it (the target's answer when the proxy let it in)."""
        data = b""
        with socket.create_connection(("127.0.0.1", self.port), timeout=20) as conn:
            try:
                conn.sendall(request)
                if then:
                    while b"\r\n\r\n" not in data and (chunk := conn.recv(4096)):
                        data += chunk
                    conn.sendall(then)
                while chunk := conn.recv(65536):
                    data += chunk
            except ConnectionError:  # the proxy closed after refusing
                pass
        return data

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.proxy.close()


def _log(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_every_loopback_spelling_is_refused(target: _Target, tmp_path: Path) -> None:
    port = target.server_address[1]
    # The allow-list names the target by every non-canonical spelling (what an operator or a
    # hostile task description might add) plus unrelated API hosts: none may open loopback.
    allow = ["api.example.com", "*.example.org",
             *(f"{s}:{port}" for s in SPELLINGS if s not in ("127.0.0.1", "[::1]", "0.0.0.0"))]
    proxy = _ProxyOnLoopback(EgressProxy(allow, tmp_path / "network.jsonl"))
    try:
        replies = {}
        for spelling in SPELLINGS:
            replies["CONNECT " + spelling] = proxy.ask(
                f"CONNECT {spelling}:{port} HTTP/1.1\r\nHost: {spelling}\r\n\r\n".encode(),
                then=b"GET / HTTP/1.0\r\n\r\n")
            replies["GET " + spelling] = proxy.ask(
                f"GET http://{spelling}:{port}/ HTTP/1.1\r\nHost: {spelling}\r\n\r\n".encode())
    finally:
        proxy.close()
    passed = {k: v[:60] for k, v in replies.items() if b" 403 " not in v.split(b"\r\n")[0]}
    assert not passed, passed
    assert target.hits == 0 and not any(REACHED in v for v in replies.values())
    log = _log(tmp_path / "network.jsonl")
    assert len(log) == 2 * len(SPELLINGS) and not any(e["allowed"] for e in log)
    assert [e["method"] for e in log] == ["CONNECT", "GET"] * len(SPELLINGS)
    # each refusal names the local address it would have reached
    vague = [e for e in log if "address" not in str(e["reason"])]
    assert not vague, vague
    assert proxy.proxy.counts == {"allowed": 0, "denied": 2 * len(SPELLINGS)}
    reply = replies["CONNECT 0x7f000001"].decode()
    assert "refused" in reply and "--allow-host" in reply  # the agent learns why and the fix


def test_an_allowed_destination_still_passes(target: _Target, tmp_path: Path) -> None:
    port = target.server_address[1]
    # The canonical address with its port is the operator naming that very service.
    proxy = _ProxyOnLoopback(EgressProxy([f"127.0.0.1:{port}"], tmp_path / "network.jsonl"))
    try:
        tunnel = proxy.ask(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode(),
                           then=b"GET / HTTP/1.0\r\n\r\n")
        plain = proxy.ask(f"GET http://127.0.0.1:{port}/ HTTP/1.0\r\n\r\n".encode())
        other = proxy.ask(f"CONNECT 127.0.0.1:{port + 1 if port < 65535 else 1} "
                          "HTTP/1.1\r\n\r\n".encode())
    finally:
        proxy.close()
    assert tunnel.startswith(b"HTTP/1.1 200 Connection established") and REACHED in tunnel
    assert REACHED in plain and b" 403 " in other.split(b"\r\n")[0]
    assert [e["allowed"] for e in _log(tmp_path / "network.jsonl")] == [True, True, False]


def test_resolved_addresses_are_all_checked(tmp_path: Path) -> None:
    # A name is refused when any address it resolves to is not public (a second lookup could
    # answer with that one); else the proxy connects to the checked address itself.
    for bad in (["8.8.8.8", "127.0.0.1"], ["::ffff:10.0.0.1"], ["169.254.169.254"],
                ["192.168.1.4"], ["fe80::1%eth0"], ["224.0.0.251"], ["::"], ["100.64.0.1"],
                ["2002:7f00:1::1"], ["240.0.0.1"], []):
        assert choose_address(bad)[0] is None, bad
    assert choose_address(["2606:4700::1111", "1.1.1.1"]) == ("2606:4700::1111", "public")
    assert choose_address(["::ffff:1.1.1.1"])[0] == "1.1.1.1"
    proxy = EgressProxy(["1.1.1.1", "*.example.org"], tmp_path / "n.jsonl")

    async def decide(host: str, port: int) -> tuple[str | None, str]:
        return await proxy._decide(host, port)

    assert asyncio.run(decide("1.1.1.1", 443)) == ("1.1.1.1", "allowed by 1.1.1.1")
    assert asyncio.run(decide("16843009", 443))[0] == "1.1.1.1"  # the same address, numeric
    assert asyncio.run(decide("169.254.169.254", 80))[0] is None
    assert asyncio.run(decide("1.1.1.1", 22))[0] is None  # not on the list for that port
    proxy.close()


# --- resource limits inside the real sandbox ---------------------------------------------


def _backend(kind: str, limits: Limits) -> object:
    try:
        sandbox = get_sandbox(kind)
        sandbox.probe()
    except A2RLError as exc:
        pytest.skip(f"{kind} cannot start here: {exc.message}")
    sandbox.limits = limits  # type: ignore[attr-defined]
    return sandbox


def _inside(kind: str, limits: Limits, script: str, ws: Path) -> str:
    """Run `script` (bash) in the `kind` sandbox through the harness's AgentProcess; its
    output."""
    sandbox = _backend(kind, limits)
    argv = sandbox.wrap(["bash", "-c", script], workspace=ws, masks=Masks())  # type: ignore[attr-defined]
    transcript = ws.parent / f"t-{uuid.uuid4().hex[:6]}.log"
    proc = AgentProcess(argv, env={"PATH": "/usr/bin:/bin"}, cwd=ws, transcript=transcript,
                        child_setup=sandbox.child_setup())  # type: ignore[attr-defined]
    try:
        reason, _code = proc.supervise(lambda: 120.0, grace_s=2)
    finally:
        proc.close()
        sandbox.cleanup()  # type: ignore[attr-defined]
    assert reason == "agent_exited"
    return transcript.read_text()


@pytest.fixture
def ws() -> Iterator[Path]:
    root = Path("/var/tmp") / f"a2rl-lim-{uuid.uuid4().hex[:8]}"
    (root / "ws").mkdir(parents=True)
    yield root / "ws"
    shutil.rmtree(root, ignore_errors=True)


BACKENDS = ["bwrap", "podman"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_limits_are_finite_and_an_option_raises_them(backend: str, ws: Path) -> None:
    show = "echo u=$(ulimit -u) v=$(ulimit -v) f=$(ulimit -f)"
    default = _inside(backend, Limits(), show, ws)
    raised = _inside(backend, Limits.from_options(8000, "3T", "300G"), show, ws)
    values = [dict(kv.split("=") for kv in out.split()) for out in (default, raised)]
    assert values[0]["u"] == "4096" and values[1]["u"] == "8000", values
    assert values[0]["f"] == str((256 << 30) // 1024) and values[1]["f"] == str(300 << 20)
    if backend == "bwrap" and not gpu_devices():
        assert values[0]["v"] != "unlimited" and values[1]["v"] == str(3 << 30), values
    if backend == "podman":  # memory is the container's cgroup limit there
        args = _backend("podman", Limits.from_options(None, "3T", None)).wrap(  # type: ignore[attr-defined]
            ["true"], workspace=ws, masks=Masks())
        assert args[args.index("--memory") + 1] == str(3 << 40)


FORK_BOMB = r"""
import subprocess
children, failed = [], 0
for _ in range(200):  # bounded: a broken limit must not take the machine down
    try:
        children.append(subprocess.Popen(["sleep", "30"]))
    except OSError:
        failed += 1
        break
print("started", len(children), "failed", failed, flush=True)
for c in children:
    c.kill()
    c.wait()
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_fork_bomb_and_oversized_file_are_stopped(backend: str, ws: Path) -> None:
    (ws / "bomb.py").write_text(FORK_BOMB)
    out = _inside(backend, Limits.from_options(40, None, "1M"),
                  f"{sys.executable} bomb.py; head -c 3000000 /dev/zero > big.bin; "
                  "echo head=$?", ws)
    started, failed = (int(x) for x in re.search(r"started (\d+) failed (\d+)", out).groups())  # type: ignore[union-attr]
    assert failed == 1 and started < 40, out
    assert "head=153" in out, out  # 128 + SIGXFSZ: the writer was stopped at the limit
    assert (ws / "big.bin").stat().st_size == 1 << 20


AGENT = r"""
import subprocess, sys
print(" " * 300 + "✔ s0999 score 100.00", flush=True)
print("x" * 150 + "✔ s0999 score 100.00", flush=True)
print("中" * 90 + "✔ s0999 score 100.00", flush=True)
subprocess.run(["head", "-c", "3000000", "/dev/zero"], stdout=open("big.bin", "wb"))
sys.stdout.flush()
with open("big2.bin", "wb") as fh:
    fh.write(b"x" * 3000000)  # EFBIG: the agent itself fails here
"""


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")
def test_agent_over_its_limits_ends_the_run_cleanly(ws: Path, tiny_model: Path) -> None:
    import base64

    runs = ws.parent / "runs"
    blob = base64.b64encode(AGENT.encode()).decode()
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=80)
    config = RunConfig(task="arith", task_params=dict(TINY_TASK),
                       agent=f"cmd:echo {blob} | base64 -d > a.py && python a.py",
                       model=str(tiny_model), mode="free", budget_s=300, sandbox="bwrap",
                       eval_timeout_s=600, grace_s=2, port=0, runs_dir=str(runs),
                       agent_procs=64, agent_file_size="1M")
    rec = run(config, run_id="lim", console=console, echo_agent=True)
    run_dir = runs / "arith" / "lim"
    assert rec.status == "finished" and rec.exit_reason == "agent_exited", rec.error
    assert rec.agent_exit_code not in (0, None)
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["config"]["agent_file_size"] == "1M" and saved["status"] == "finished"
    transcript = (run_dir / "agent" / "transcript.log").read_text()
    assert transcript.count("✔ s0999") == 3 and "File too large" in transcript
    # the console: every screen line of the agent's output carries the prefix
    shown = buf.getvalue()
    assert not re.search(r"^\s*✔", shown, re.M), shown
    assert all(ln.startswith("  agent│") for ln in shown.splitlines() if "s0999" in ln)
