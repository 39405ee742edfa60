"""Loopback bridge for the sandbox's private network namespace (`--network allowlist` and
`none`): nothing outside is reachable, and only chosen host loopback ports (the grader, a local
driver endpoint, the egress proxy) are relayed into it through Unix sockets.

Host side (`HostBridge`, in the harness): one Unix socket per port, relayed to 127.0.0.1:port
(or, for the egress proxy, served by the proxy itself). The socket folder is mounted READ-ONLY
inside: connecting to a socket needs no write access to its mount, while creating, replacing or
filling files there does (an agent once wrote 64 MB into a writable socket folder).
Inside (`inside_command(...)`: `main(PORT=SOCKET ... -- argv)`): listens on 127.0.0.1:PORT in
the sandbox's namespace, relays to the socket, and runs the agent's argv as its child, so the
agent uses the same URLs as with full network. The child inherits no descriptor but stdio.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

SOCKET_DIR_IN_SANDBOX = "/run/a2rl-net"
FORWARD_TERM = "+forward-term"
# argv[1] is a2rl's own source root (mounted read-only): the bridge imports the harness's
# a2rl whatever the agent's interpreter would import.
BRIDGE_CODE = ("import sys; sys.path.insert(0, sys.argv[1]); "
               "from a2rl.sandbox._bridge import main; sys.exit(main(sys.argv[2:]))")

Opener = Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def copy_stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy `reader` into `writer` until either side closes; then close `writer`."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


def _relay(open_upstream: Opener) -> Handler:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await open_upstream()
        except OSError:
            writer.close()
            return
        await asyncio.gather(copy_stream(reader, up_writer), copy_stream(up_reader, writer))

    return handle


class _LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Awaitable[object]) -> object:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=10)  # type: ignore[arg-type]

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


class HostBridge:
    """Relays Unix sockets (one per port, `<port>.sock`) to 127.0.0.1:<port>; `served` ports
    are answered by a handler in the harness instead (the egress proxy). The sockets live in a
    fresh private folder under the system temp dir: a Unix socket path must stay under ~100
    bytes, which a run directory's path may not."""

    def __init__(self, ports: list[int], *, served: Mapping[int, Handler] | None = None) -> None:
        self.served = dict(served or {})
        self.ports = sorted(set(ports) | set(self.served))
        self.socket_dir = Path(tempfile.mkdtemp(prefix="a2rl-net-"))  # mode 0700
        self._loop: _LoopThread | None = None
        self._servers: list[asyncio.AbstractServer] = []

    def start(self) -> HostBridge:
        self._loop = _LoopThread()
        for port in self.ports:
            path = self.socket_dir / f"{port}.sock"
            path.unlink(missing_ok=True)

            def upstream(port: int = port) -> Awaitable[tuple[asyncio.StreamReader,
                                                               asyncio.StreamWriter]]:
                return asyncio.open_connection("127.0.0.1", port)

            handler = self.served.get(port) or _relay(upstream)
            server = self._loop.run(asyncio.start_unix_server(handler, path=str(path)))
            self._servers.append(server)  # type: ignore[arg-type]
        # The folder itself is mounted read-only; the sockets stay connectable (connect()
        # needs write permission on the socket inode, which a read-only mount does not remove).
        self.socket_dir.chmod(0o755)
        for port in self.ports:
            (self.socket_dir / f"{port}.sock").chmod(0o666)
        return self

    def inside_command(self, argv: list[str], *, python: str | None = None,
                       forward_term: bool = False) -> list[str]:
        """`argv` run under the bridge's inside half (listening on the relayed ports).
        `forward_term`: the bridge passes a SIGTERM on to the agent (for backends where the
        harness cannot signal the sandbox's processes itself: podman's are not its
        descendants)."""
        maps = [f"{p}={SOCKET_DIR_IN_SANDBOX}/{p}.sock" for p in self.ports]
        maps += [FORWARD_TERM] if forward_term else []
        import a2rl

        source = str(Path(a2rl.__file__).resolve().parent.parent)
        return [python or sys.executable, "-c", BRIDGE_CODE, source, *maps, "--", *argv]

    def stop(self) -> None:
        if self._loop is None:
            return
        for server in self._servers:
            self._loop.loop.call_soon_threadsafe(server.close)
        self._loop.stop()
        self._loop = None
        shutil.rmtree(self.socket_dir, ignore_errors=True)


def main(argv: list[str]) -> int:
    """Inside the sandbox: `PORT=SOCKET ... -- command...`."""
    split = argv.index("--")
    forward_term = FORWARD_TERM in argv[:split]
    mappings = [m.split("=", 1) for m in argv[:split] if m != FORWARD_TERM]
    command = argv[split + 1:]
    loop = _LoopThread()
    for port, sock in mappings:
        def upstream(sock: str = sock) -> Awaitable[tuple[asyncio.StreamReader,
                                                          asyncio.StreamWriter]]:
            return asyncio.open_unix_connection(sock)

        loop.run(asyncio.start_server(_relay(upstream), "127.0.0.1", int(port)))
    # The harness signals every process of the agent at the budget's end; the bridge keeps
    # relaying while its child uses the grace period, and exits with it. Where the harness
    # cannot reach the agent's processes (podman), the bridge passes the SIGTERM on.
    child_holder: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, _frame: object) -> None:
        for child in child_holder:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward if forward_term else signal.SIG_IGN)
    # close_fds: the agent gets stdio only, not the bridge's listening sockets.
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, close_fds=True,
                             preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    child_holder.append(child)
    return child.wait()
