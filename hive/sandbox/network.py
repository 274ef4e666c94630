"""A sandbox's way out (`[sandbox] network`): none at all, the host's ("open"), or only the
hosts of an allowlist through a proxy Hive runs beside it (`proxy.py beside` on the host,
started by envexec or the agent's log writer at the first request, reached through a unix socket in a folder shown to
the sandbox; `relay.py` inside, where HTTPS_PROXY points).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from hive import scripts
from hive.adapters import envexec
from hive.errors import HiveError
from hive.sandbox import proxy, relay

# inside the sandbox (its own /tmp and loopback): where the folder of the host's proxy socket
# is shown, and the port its relay listens on
INSIDE_DIR = Path("/tmp/.hive-proxy")
SOCKET_NAME = "proxy.sock"
INSIDE_SOCKET = INSIDE_DIR / SOCKET_NAME
RELAY_PORT = 39128
# variables that name a model server: the host each points at is let through
URL_SUFFIXES = ("_BASE_URL", "_API_BASE")
PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY", "all_proxy")


@dataclass(frozen=True)
class Way:
    """How one sandboxed program reaches the network."""

    mode: str  # `[sandbox] network`: one of schema.SANDBOX_NETWORKS
    allow: tuple[str, ...] = ()  # with "allowlist": the hosts let through (proxy.rule's entries)
    socket: Path | None = None  # with "allowlist": where the host's proxy listens
    refused: Path | None = None  # with "allowlist": where the proxy records what it refused

    @property
    def isolated(self) -> bool:
        """The sandbox has no network of its own (only its own loopback)."""
        return self.mode != "open"

    @property
    def proxied(self) -> bool:
        return self.mode == "allowlist"

    def outside(self) -> list[str]:
        """What runs the sandbox (before bwrap) of a check, which Hive starts itself: envexec,
        with the proxy beside it (as an agent's, started at the first request: most checks
        make none, and a proxy started for each cost ~40 ms of CPU)."""
        return [*scripts.argv(envexec.__file__), "-", *self.beside()] if self.proxied else []

    def beside(self) -> list[str]:
        """The proxy to start beside the sandbox at its first connection, serving until the
        process that runs the sandbox has ended (an agent's: hive.adapters.envexec's options, which its
        log's writer takes)."""
        return envexec.beside(str(self.socket), self._proxy("beside")) if self.proxied else []

    def _proxy(self, mode: str) -> list[str]:
        assert self.socket is not None and self.refused is not None
        return [*scripts.argv(proxy.__file__), mode, str(self.socket), ",".join(self.allow), str(self.refused)]

    def inside(self) -> list[str]:
        """What runs first inside it (before the program): the relay to the proxy."""
        if not self.proxied:
            return []
        return [*scripts.argv(relay.__file__), str(INSIDE_SOCKET), str(RELAY_PORT), "--"]

    def binds(self) -> tuple[tuple[Path, Path], ...]:
        return ((self.socket.parent, INSIDE_DIR),) if self.proxied and self.socket is not None else ()

    def environment(self) -> dict[str, str]:
        """Where clients find the proxy; NO_PROXY emptied, since a host it names would be
        tried directly, and there is no direct way out."""
        if not self.proxied:
            return {}
        url = f"http://127.0.0.1:{RELAY_PORT}"
        return {**dict.fromkeys(PROXY_VARIABLES, url), "NO_PROXY": "", "no_proxy": ""}


def way(mode: str, allow: Iterable[str], name: str, refused: Path) -> Way:
    """The way out of the sandbox `name` (unique to one attempt or check) under `mode`."""
    if mode != "allowlist":
        return Way(mode)
    hosts = tuple(dict.fromkeys(h.strip().lower() for h in allow if _readable(h.strip())))
    refused.parent.mkdir(parents=True, exist_ok=True)  # the proxy only appends to it
    return Way(mode, hosts, socket_path(name), refused)


def _readable(entry: str) -> bool:
    """Is it an entry the proxy reads (`[sandbox] allow`'s were checked as the config loaded)?
    A host from elsewhere that is none (`http://a,b/` names "a,b") is left out, not passed on
    to be split at its comma into others."""
    try:
        proxy.rule(entry)
    except ValueError:
        return False
    return True


def hosts_in(env: Mapping[str, str]) -> list[str]:
    """The hosts that an environment's model-server URLs (`*_BASE_URL`, `*_API_BASE`) name."""
    out = []
    for key, value in env.items():
        if key.upper().endswith(URL_SUFFIXES):
            try:
                host = urlsplit(value.strip()).hostname
            except ValueError:
                continue
            if host:
                out.append(host)
    return out


def refusals(path: Path) -> list[dict[str, object]]:
    """What the proxy refused, as it recorded it (a torn last line is skipped)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def socket_path(name: str) -> Path:
    """A short path for a unix socket (108 bytes at most, wherever the repository is), in a
    folder of its own, which is what the sandbox is shown (a socket made anew would not be the
    one shown), in a folder of this user's that nobody else can enter."""
    folder = Path(tempfile.gettempdir()) / f"hive-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError as e:
        raise HiveError(f"cannot make {folder} for the sandbox's proxy: {e}") from e
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise HiveError(
            f"{folder} is not a private folder of yours (another user made it, or it is open to all); "
            f"remove it, then run again"
        )
    own = folder / hashlib.sha256(name.encode()).hexdigest()[:20]
    try:
        own.mkdir(mode=0o700, exist_ok=True)
    except OSError as e:
        raise HiveError(f"cannot make {own} for the sandbox's proxy: {e}") from e
    return own / SOCKET_NAME
