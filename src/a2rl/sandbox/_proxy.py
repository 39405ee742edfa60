"""The egress proxy of `--network allowlist`: the only way out of the sandbox's network
namespace. It runs in the harness (outside the sandbox), reached through the loopback bridge,
and the agent's environment points HTTP(S)_PROXY at it. It serves `CONNECT host:port` (TLS
tunnels) and absolute-URI HTTP requests, only to allowed hosts, and appends one JSON line per
attempt to `agent/network.jsonl` (time, host, port, allowed or denied and why, the path of a
plain-HTTP request, when the connection was accepted and on which port): the run's record of
every connection the agent made or tried. The accept time and port let the analysis match each
line to the traced `connect()` of the process that opened it (`a2rl.analysis._egress`).

Allow-list entries: `host` (ports 80 and 443), `host:port`, `*.domain` (any subdomain).

Destinations that are not public addresses (loopback, private, link-local including the
169.254.169.254 metadata service, multicast, reserved, unspecified; IPv6 forms embedding such
an IPv4 address) are refused however they are spelled: a numeric host is read the way
`socket.inet_aton` reads it (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`), IPv4-mapped
IPv6 (`[::ffff:127.0.0.1]`) is unwrapped, and a name is resolved and every address it resolves
to is checked. The proxy then connects to the checked address (never re-resolving the name, so
a second DNS answer cannot point it elsewhere). The one exception is an entry that is itself
the address in canonical form with its port (`127.0.0.1:8000`): the operator named that very
local service. Otherwise an allowed name re-pointed at 127.0.0.1 would reach the host's own
services (other runs' graders).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import socket
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from a2rl._errors import A2RLError
from a2rl.sandbox._bridge import copy_stream

_MAX_HEADER = 64 * 1024
_DEFAULT_PORTS = (80, 443)
PACKAGE_INDEX_HOSTS = ("pypi.org", "files.pythonhosted.org", "registry.npmjs.org")


@dataclass(frozen=True)
class AllowEntry:
    host: str
    """Lower-case host name or address; a leading `*.` matches any subdomain."""
    port: int | None
    """None: ports 80 and 443."""

    @classmethod
    def parse(cls, spec: str) -> AllowEntry:
        text = spec.strip().lower()
        if "://" in text:  # a URL: keep its host and port
            from urllib.parse import urlsplit

            parts = urlsplit(text)
            if not parts.hostname:
                raise A2RLError(f"--allow-host {spec!r} has no host", "e.g. --allow-host api.x.com")
            return cls(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
        host, port = text, None
        if text.startswith("["):  # [v6]:port
            host, _, rest = text[1:].partition("]")
            port = int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
        elif text.count(":") == 1:
            host, _, p = text.partition(":")
            if not p.isdigit():
                raise A2RLError(f"--allow-host {spec!r}: the port is not a number",
                                "use host, host:port or *.domain")
            port = int(p)
        if not host or any(c in host for c in "/ @"):
            raise A2RLError(f"--allow-host {spec!r} is not a host name",
                            "use host, host:port or *.domain")
        return cls(host, port)

    def matches(self, host: str, port: int) -> bool:
        if self.port is None and port not in _DEFAULT_PORTS:
            return False
        if self.port is not None and port != self.port:
            return False
        if self.host.startswith("*."):
            return host.endswith(self.host[1:])
        return host == self.host

    def names_address(self, address: str, port: int) -> bool:
        """The entry is exactly `address` (canonical form) with `port`: the operator allowed
        that local service by name."""
        return self.port == port and self.host == address

    def __str__(self) -> str:
        return self.host if self.port is None else f"{self.host}:{self.port}"


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _literal_address(host: str) -> str | None:
    """The canonical address a numeric host stands for (None for a name): IPv6 (brackets and
    zone removed, IPv4-mapped unwrapped), dotted quads, and every form `inet_aton` accepts
    (`127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`)."""
    text = host.strip().lower().rstrip(".")
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    text = text.split("%", 1)[0]
    try:
        ip: IPAddress = ipaddress.ip_address(text)
    except ValueError:
        if not text or any(c not in "0123456789abcdefx." for c in text):
            return None
        try:
            ip = ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


def _not_public(address: str) -> str | None:
    """Why `address` (canonical) is not a public destination, or None when it is one."""
    ip = ipaddress.ip_address(address)
    embedded: list[IPAddress] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        embedded += [e for e in (ip.ipv4_mapped, ip.sixtofour,
                                 ip.teredo[1] if ip.teredo else None) if e is not None]
    for one in embedded:
        for name in ("loopback", "unspecified", "link_local", "multicast", "private",
                     "reserved"):
            if getattr(one, f"is_{name}"):
                return f"{name.replace('_', '-')} address {address}"
        if not one.is_global:
            return f"non-public address {address}"
    return None


def choose_address(resolved: Sequence[str]) -> tuple[str | None, str]:
    """(the address to connect to, reason) for a name that resolved to `resolved`: refused
    (None) when any of them is not public, since a later lookup may answer with any of them;
    else the first, which the proxy then connects to without resolving the name again."""
    addrs = [a for a in (_literal_address(r) for r in resolved) if a is not None]
    if not addrs:
        return None, "resolves to no address"
    refused = [why for a in addrs if (why := _not_public(a)) is not None]
    if refused:
        return None, ("resolves to a local address (" + ", ".join(sorted(set(addrs)))
                      + f"; {refused[0]}): only public destinations are proxied")
    return addrs[0], "public"


def _is_local(host: str) -> bool:
    address = _literal_address(host)
    return address is not None and _not_public(address) is not None


class EgressProxy:
    """CONNECT/HTTP proxy with an allow-list; `handle` is served on the bridge's proxy socket."""

    def __init__(self, allow: Iterable[str | AllowEntry], log_path: Path, *,
                 port: int | None = None) -> None:
        self.port = port
        """The port the agent reaches the proxy on (recorded with each line)."""
        self.allow = [a if isinstance(a, AllowEntry) else AllowEntry.parse(a) for a in allow]
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = log_path.open("a")
        self._lock = threading.Lock()
        self.counts = {"allowed": 0, "denied": 0}

    def close(self) -> None:
        with self._lock:
            self._log.close()

    def _record(self, host: str, port: int, method: str, allowed: bool, reason: str, *,
                accepted: float, path: str | None = None) -> None:
        line = {"t": round(time.time(), 3), "host": host[:300], "port": port,
                "method": method[:16], "allowed": allowed, "reason": reason[:300],
                "accepted": round(accepted, 6), "proxy_port": self.port}
        if path is not None:
            line["path"] = path[:200]
        with self._lock:
            self.counts["allowed" if allowed else "denied"] += 1
            if self._log.closed:
                return
            self._log.write(json.dumps(line) + "\n")
            self._log.flush()

    async def _decide(self, host: str, port: int) -> tuple[str | None, str]:
        """(address to connect to, reason); address None = refused. Every address the host
        stands for is checked, and the one returned is what the proxy connects to."""
        literal = _literal_address(host)
        if literal is not None:
            why = _not_public(literal)
            if why is not None and not any(e.names_address(literal, port) for e in self.allow):
                return None, f"{host} is a {why}: only public destinations are proxied"
            entries = [e for e in self.allow if e.matches(host, port) or e.matches(literal, port)]
            if not entries:
                return None, "not on the allow-list"
            return literal, "allowed by " + str(entries[0])
        entries = [e for e in self.allow if e.matches(host, port)]
        if not entries:
            return None, "not on the allow-list"
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            return None, f"cannot resolve: {exc.strerror or exc}"
        address, why = choose_address([str(i[4][0]) for i in infos])
        return address, why if address is None else "allowed by " + str(entries[0])

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted = time.time()
        try:
            await self._handle(reader, writer, accepted)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ValueError, OSError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      accepted: float) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > _MAX_HEADER:
            return
        request_line, _, rest = head.partition(b"\r\n")
        parts = request_line.decode("latin-1").split()
        if len(parts) != 3:
            await _reply(writer, 400, "bad request")
            return
        method, target, version = parts
        if method.upper() == "CONNECT":
            host, port = _split_host_port(target, 443)
            forward, path = b"", None
        else:
            from urllib.parse import urlsplit

            url = urlsplit(target)
            if url.scheme != "http" or not url.hostname:
                self._record(target[:100], 0, method, False, "not an absolute http:// URL",
                             accepted=accepted)
                await _reply(writer, 400, "only CONNECT and absolute http:// URLs are proxied")
                return
            host, port = url.hostname, url.port or 80
            target_path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            forward = f"{method} {target_path} {version}\r\n".encode("latin-1") + rest
            path = url.path or "/"  # logged without the query, which may carry a key
        host = host.lower().rstrip(".").removeprefix("[").removesuffix("]")
        address, reason = await self._decide(host, port)
        self._record(host, port, method, address is not None, reason, accepted=accepted,
                     path=path)
        if address is None:
            await _reply(writer, 403, f"egress to {host}:{port} refused ({reason}); the run's "
                         "--allow-host list decides")
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(address, port), timeout=30)
        except (TimeoutError, OSError) as exc:
            await _reply(writer, 502, f"cannot connect to {host}:{port}: {exc}")
            return
        if forward:
            up_writer.write(forward)
        else:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await asyncio.gather(copy_stream(reader, up_writer), copy_stream(up_reader, writer))


def _split_host_port(target: str, default: int) -> tuple[str, int]:
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else default
    host, sep, port = target.rpartition(":")
    if not sep:
        return target, default
    return host, int(port)


async def _reply(writer: asyncio.StreamWriter, code: int, text: str) -> None:
    body = (text + "\n").encode()
    writer.write(f"HTTP/1.1 {code} {'Forbidden' if code == 403 else 'Error'}\r\n"
                 f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                 "Connection: close\r\n\r\n".encode() + body)
    with contextlib.suppress(Exception):
        await writer.drain()




def default_allow_list(agent_hosts: Iterable[str], driver_base_url: str | None,
                       extra: Iterable[str], *, package_indexes: bool = False) -> list[str]:
    """The run's allow-list: the agent's API hosts (`Agent.api_hosts`; its driver endpoint's
    host instead when one is given), package indexes when the task permits them, and every
    `--allow-host`."""
    hosts: list[str] = []
    if driver_base_url:
        from urllib.parse import urlsplit

        parts = urlsplit(driver_base_url)
        if parts.hostname and not _is_local(parts.hostname) and parts.hostname != "localhost":
            hosts.append(parts.hostname + (f":{parts.port}" if parts.port else ""))
    else:
        hosts += list(agent_hosts)
    if package_indexes:
        hosts += PACKAGE_INDEX_HOSTS
    hosts += list(extra)
    return list(dict.fromkeys(hosts))
