"""Loopback bridge for `--network none`: the sandbox gets its own network namespace (nothing
outside is reachable), and only chosen host loopback ports (the grader, a local driver
endpoint) are relayed into it through Unix sockets.

Host side (`HostBridge`, in the harness): one Unix socket per port, relayed to 127.0.0.1:port.
Inside (`inside_command(...)`: `main(PORT=SOCKET ... -- argv)`): listens on 127.0.0.1:PORT in
the sandbox's namespace, relays to the socket, and runs the agent's argv as its child, so the
agent uses the same URLs as with full network.
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
from collections.abc import Awaitable, Callable
from pathlib import Path

SOCKET_DIR_IN_SANDBOX = "/run/a2rl-net"

Opener = Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


def _relay(open_upstream: Opener) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter],
                                              Awaitable[None]]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await open_upstream()
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

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
    """Relays Unix sockets (one per port, `<port>.sock`) to 127.0.0.1:<port>. The sockets live
    in a fresh private folder under the system temp dir: a Unix socket path must stay under
    ~100 bytes, which a run directory's path may not."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = sorted(set(ports))
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

            server = self._loop.run(asyncio.start_unix_server(_relay(upstream), path=str(path)))
            self._servers.append(server)  # type: ignore[arg-type]
        return self

    def inside_command(self, argv: list[str]) -> list[str]:
        """`argv` run under the bridge's inside half (listening on the relayed ports)."""
        maps = [f"{p}={SOCKET_DIR_IN_SANDBOX}/{p}.sock" for p in self.ports]
        return [sys.executable, "-c", "import sys; from a2rl.sandbox._bridge import main; "
                "sys.exit(main(sys.argv[1:]))", *maps, "--", *argv]

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
    mappings = [m.split("=", 1) for m in argv[:split]]
    command = argv[split + 1:]
    loop = _LoopThread()
    for port, sock in mappings:
        def upstream(sock: str = sock) -> Awaitable[tuple[asyncio.StreamReader,
                                                          asyncio.StreamWriter]]:
            return asyncio.open_unix_connection(sock)

        loop.run(asyncio.start_server(_relay(upstream), "127.0.0.1", int(port)))
    # The harness signals every process of the agent at the budget's end; the bridge keeps
    # relaying while its child uses the grace period, and exits with it.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # close_fds=False: the exec tracer's log descriptor is inherited through the bridge.
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, close_fds=False,
                             preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    return child.wait()
