"""`a2rl view`: the report of a runs folder served on this machine (127.0.0.1), rebuilt
whenever the runs' records change while any run is still going, so the pages of running runs
fill in as they go. a2rl.cli registers the command.

Each build goes to a fresh folder and the server switches to it once it is complete, so a
page is never read half-written; the folder before is then removed. While a run is live, the
HTML pages ask the browser to reload them (a refresh header, nothing written into the site).
"""

from __future__ import annotations

import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from a2rl.cli._options import _runs_dir

if TYPE_CHECKING:
    from http.server import ThreadingHTTPServer

_EMPTY = ("<!doctype html><meta charset='utf-8'><title>a2rl view</title>"
          "<p>No run under this folder yet; this page reloads until one appears.</p>")


class _Site:
    """The folder being served now, and whether a run is live (pages then reload)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.current = root / "empty"
        self.current.mkdir()
        (self.current / "index.html").write_text(_EMPTY)
        self.live = True
        self.refresh_s = 10
        self._builds = 0

    def publish(self, build: Path) -> None:
        old, self.current = self.current, build
        shutil.rmtree(old, ignore_errors=True)

    def next_folder(self) -> Path:
        self._builds += 1
        return self.root / f"build-{self._builds}"


def _server(site: _Site, port: int) -> ThreadingHTTPServer:
    """A server on 127.0.0.1:`port` for the folder `site` serves now (http.server is imported
    here: `a2rl --help` stays fast)."""
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, request: Any, client_address: Any, server: Any) -> None:
            super().__init__(request, client_address, server, directory=str(site.current))

        def end_headers(self) -> None:
            if site.live and self.path.split("?")[0].endswith((".html", "/")):
                self.send_header("Refresh", str(site.refresh_s))
            self.send_header("Cache-Control", "no-store")
            super().end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
            return None  # the console shows the view's own lines, not one per request

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    return server


def _state(runs: Path) -> tuple[tuple[tuple[str, int, int], ...], bool]:
    """What a rebuild depends on (each run's run.json and ledger, by size and time), and
    whether any run is live."""
    from a2rl.results import find_run_dirs
    from a2rl.runner.prune import entry

    marks: list[tuple[str, int, int]] = []
    live = False
    for run_dir in find_run_dirs([runs]):
        live |= entry(run_dir).live
        for name in ("run.json", "ledger.jsonl", "analysis.json"):
            try:
                st = (run_dir / name).stat()
            except OSError:
                continue
            marks.append((str(run_dir / name), st.st_mtime_ns, st.st_size))
    return tuple(marks), live


def _stop(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def view(
    runs_dir: Annotated[Path | None, typer.Argument(help="Runs folder (default ./runs or "
                                                     "$A2RL_RUNS_DIR), a run directory or a "
                                                     "sweep's output folder.")] = None,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: a free one).")] = 7575,
    every: Annotated[float, typer.Option("--every", min=1.0, help="Seconds between two looks "
                                         "at the runs' records (a change rebuilds the report).")
                     ] = 10.0,
) -> None:
    """Serve the report of a runs folder on localhost, rebuilt as running runs go (Ctrl-C
    stops)."""
    from a2rl._console import make_console, safe
    from a2rl._errors import A2RLError
    from a2rl.report import build_report

    runs = _runs_dir(runs_dir)
    if not runs.exists():
        raise A2RLError(f"{runs} does not exist", "pass a runs folder (./runs) or start a run first")
    console = make_console()
    site = _Site(Path(tempfile.mkdtemp(prefix="a2rl-view-")))
    site.refresh_s = max(5, round(every))
    try:
        server = _server(site, port)
    except OSError as exc:
        shutil.rmtree(site.root, ignore_errors=True)
        raise A2RLError(f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}",
                        "pick another port with --port (or --port 0 for a free one)") from exc
    thread = threading.Thread(target=server.serve_forever, name="a2rl-view", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    console.print(f"serving the report of {safe(runs)} at {url} (Ctrl-C stops)", highlight=False)
    built: tuple[tuple[str, int, int], ...] | None = None
    signal.signal(signal.SIGTERM, _stop)  # stopped by a service manager: clean up as on Ctrl-C
    try:
        while True:
            marks, site.live = _state(runs)
            if marks and marks != built:
                folder = site.next_folder()
                try:
                    build_report([runs], folder)
                except Exception as exc:  # a run mid-write or a bad record: keep the last site
                    shutil.rmtree(folder, ignore_errors=True)
                    console.print(f"[yellow]rebuilding the report failed: "
                                  f"{safe(type(exc).__name__)}: {safe(exc)}[/]")
                else:
                    site.publish(folder)
                    built = marks
                    console.print(f"[{time.strftime('%H:%M:%S')}] report rebuilt"
                                  + (" (runs still going)" if site.live else ""), markup=False,
                                  highlight=False)
            time.sleep(every)
    except KeyboardInterrupt:
        console.print("stopped", highlight=False)
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(site.root, ignore_errors=True)
