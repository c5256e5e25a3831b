"""The HTTP layer: finding the server, sending requests, decoding errors, reading SSE streams."""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Optional, Tuple

from ._errors import AgentrunError

NO_SERVER = "no agentrun server found: start one with `agentrun serve`, or set AGENTRUN_URL"

# The server's codes for statuses that came without a JSON error body (the Go client's
# codeForStatus).
_STATUS_CODES = {400: "Invalid", 401: "Unauthorized", 403: "Unauthorized", 404: "NotFound",
                 409: "Conflict", 413: "PayloadTooLarge", 422: "Invalid"}


def data_dir() -> str:
    """The data folder: AGENTRUN_HOME, else ~/.agentrun (as the CLI has it)."""
    d = os.environ.get("AGENTRUN_HOME", "")
    if d:
        return d
    return os.path.join(os.path.expanduser("~"), ".agentrun")


def _normalize_url(u: str) -> str:
    u = u.strip()
    if u and "://" not in u:
        u = "http://" + u
    u = u.rstrip("/")
    if u.endswith("/v2"):
        u = u[: -len("/v2")]
    return u


def _read_server_file(path: str) -> str:
    with open(path, "rb") as f:
        raw = f.read()
    try:
        info = json.loads(raw)
    except ValueError as e:
        raise AgentrunError("NoServer", f"{NO_SERVER} ({path}: {e})") from e
    url = info.get("url", "") if isinstance(info, dict) else ""
    if not isinstance(url, str) or not url.strip():
        raise AgentrunError("NoServer", f"{NO_SERVER} ({path} has no url)")
    return _normalize_url(url)


def _session_for(folder: str, base_url: str, local: bool) -> Optional[str]:
    """A person's saved session (agentrun login) for base_url; for the local server any URL."""
    try:
        with open(os.path.join(folder, "session.json"), "rb") as f:
            s = json.loads(f.read())
    except (OSError, ValueError):
        return None
    if not isinstance(s, dict):
        return None
    sess = s.get("session", "")
    if not isinstance(sess, str) or not sess.startswith("ars_"):
        return None
    if not local and _normalize_url(str(s.get("url", ""))) != base_url:
        return None
    return sess


@dataclass
class Event:
    """One timeline entry of a run (GET /v2/agentruns/NAME/events)."""

    seq: int
    type: str
    time: str = ""
    step_key: str = ""
    message: str = ""
    data: Any = None

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Event":
        return Event(seq=int(d.get("seq", 0)), type=str(d.get("type", "")), time=str(d.get("time", "")),
                     step_key=str(d.get("stepKey", "")), message=str(d.get("message", "")), data=d.get("data"))


@dataclass
class SSEMessage:
    """One server-sent event as it came off the wire."""

    event: str = "message"
    data: str = ""
    id: Optional[str] = None
    retry: Optional[int] = None


def parse_sse(lines: Iterator[bytes]) -> Iterator[SSEMessage]:
    """Parse an SSE stream (the WHATWG rules: fields up to a blank line, ':' comments, multi-line
    data joined with newlines). A message with no data is not dispatched."""
    msg = SSEMessage()
    data: list = []
    for raw in lines:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if line == "":
            if data:
                msg.data = "\n".join(data)
                yield msg
            msg, data = SSEMessage(), []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            msg.event = value
        elif name == "id":
            msg.id = value
        elif name == "retry" and value.isdigit():
            msg.retry = int(value)
    if data:
        msg.data = "\n".join(data)
        yield msg


@dataclass
class Client:
    """One agentrun server: its base URL and the bearer token requests carry. Thread-safe."""

    url: str
    token: str = ""
    timeout: float = 60.0
    # server.json the URL came from: a restarted local server may listen on another port, so a
    # request that could not connect reads it again once.
    server_file: Optional[str] = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.url = _normalize_url(self.url)
        self.token = self.token.strip()

    @classmethod
    def discover(cls, url: Optional[str] = None, token: Optional[str] = None) -> "Client":
        """Find the server the way the CLI does. The URL: url, else AGENTRUN_URL, else the data
        folder's server.json. The token: token, else AGENTRUN_TOKEN, else a person's session saved
        by `agentrun login` for that server, else the data folder's token file."""
        folder = data_dir()
        server_file: Optional[str] = None
        if url:
            base = _normalize_url(url)
        elif os.environ.get("AGENTRUN_URL"):
            base = _normalize_url(os.environ["AGENTRUN_URL"])
        else:
            server_file = os.path.join(folder, "server.json")
            try:
                base = _read_server_file(server_file)
            except FileNotFoundError:
                raise AgentrunError("NoServer", NO_SERVER) from None
            except OSError as e:
                raise AgentrunError("NoServer", f"{NO_SERVER} (reading {server_file}: {e})") from e
        if token:
            tok = token
        elif os.environ.get("AGENTRUN_TOKEN"):
            tok = os.environ["AGENTRUN_TOKEN"]
        else:
            sess = _session_for(folder, base, server_file is not None)
            if sess is not None:
                tok = sess
            else:
                try:
                    with open(os.path.join(folder, "token"), encoding="utf-8") as f:
                        tok = f.read()
                except FileNotFoundError:
                    tok = ""
                except OSError as e:
                    raise AgentrunError("Unauthorized", f"read the API token: {e}") from e
        return cls(url=base, token=tok, server_file=server_file)

    # Requests.

    def _open(self, method: str, path: str, body: Any = None, query: Optional[Mapping[str, str]] = None,
              headers: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> http.client.HTTPResponse:
        data: Optional[bytes] = None
        hdrs = {"Accept": "application/json"}
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        if headers:
            hdrs.update(headers)
        with self._lock:
            base, tok = self.url, self.token
        if tok:
            hdrs["Authorization"] = "Bearer " + tok
        for attempt in range(2):
            u = base + path
            if query:
                u += "?" + urllib.parse.urlencode(query)
            req = urllib.request.Request(u, data=data, method=method, headers=hdrs)
            try:
                resp = urllib.request.urlopen(req, timeout=timeout if timeout is not None else self.timeout)
                return resp  # type: ignore[no-any-return]
            except urllib.error.HTTPError as e:
                try:
                    raise decode_error(e.code, e.read()) from None
                finally:
                    e.close()
            except urllib.error.URLError as e:
                # Not connected, so never sent: safe to send once more to where server.json points now.
                if attempt == 0 and isinstance(e.reason, ConnectionRefusedError):
                    nb = self._rediscover(base)
                    if nb:
                        base = nb
                        continue
                raise AgentrunError("Unreachable", f"cannot reach the agentrun server at {base}: {e.reason} "
                                    "(is it running? start one with `agentrun serve`)") from e
        raise AssertionError("unreachable")

    def _rediscover(self, old: str) -> Optional[str]:
        if not self.server_file:
            return None
        try:
            nu = _read_server_file(self.server_file)
        except (OSError, AgentrunError):
            return None
        if nu == old:
            return None
        with self._lock:
            self.url = nu
        return nu

    def request(self, method: str, path: str, body: Any = None, query: Optional[Mapping[str, str]] = None,
                headers: Optional[Mapping[str, str]] = None) -> Any:
        """Send one request; return its decoded JSON (None for an empty body). A non-2xx answer
        raises AgentrunError with the server's code, message and field."""
        with self._open(method, path, body, query, headers) as resp:
            raw = resp.read()
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise AgentrunError("Internal", f"{method} {path}: the server's answer is not JSON: {e}") from e

    def text(self, path: str) -> str:
        """GET a text resource (a run's whole answer)."""
        with self._open("GET", path, headers={"Accept": "text/plain, application/json"}) as resp:
            return resp.read().decode("utf-8")  # type: ignore[no-any-return]

    def events(self, run: str, after: int = 0, read_timeout: float = 20.0) -> Iterator[Tuple[str, Any]]:
        """Follow a run's timeline over SSE from after: yields ("event", Event) for each entry and
        ("end", {"phase", "reason"}) when the run has finished. A quiet stream raises
        socket.timeout after read_timeout seconds (the server sends a keepalive every 15)."""
        resp = self._open("GET", path_of("agentruns", run, "events"), query={"after": str(after)} if after else None,
                          headers={"Accept": "text/event-stream"}, timeout=read_timeout)
        with resp:
            for m in parse_sse(iter(resp.readline, b"")):
                payload = json.loads(m.data) if m.data else None
                if m.event == "end":
                    yield "end", payload
                    return
                if m.event == "error":
                    msg = payload.get("message", "") if isinstance(payload, dict) else m.data
                    raise AgentrunError("Internal", f"timeline of {run}: {msg}")
                if isinstance(payload, dict):
                    yield "event", Event.from_json(payload)


def decode_error(status: int, body: bytes) -> AgentrunError:
    """The server's {code, message, field}, else a code from the HTTP status and the body's text."""
    code, message, fld = "", "", None
    try:
        d = json.loads(body)
        if isinstance(d, dict):
            code, message = str(d.get("code") or ""), str(d.get("message") or "")
            fld = d.get("field") or None
    except ValueError:
        pass
    if not code and not message:
        message = body.decode("utf-8", "replace").strip()
    if not code:
        code = _STATUS_CODES.get(status) or ("Internal" if status >= 500 else f"HTTP{status}")
    if not message:
        message = f"HTTP status {status}"
    return AgentrunError(code, message, field=fld, status=status)


def path_of(plural: str, name: str, *sub: str) -> str:
    p = "/v2/" + plural + "/" + urllib.parse.quote(name, safe="")
    for s in sub:
        p += "/" + s
    return p


_default: Optional[Client] = None
_default_lock = threading.Lock()


def default_client() -> Client:
    """The client the module-level API uses: configure()'s, else one found by Client.discover()."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Client.discover()
        return _default


def configure(url: Optional[str] = None, token: Optional[str] = None, client: Optional[Client] = None) -> Client:
    """Point the module-level API at a server (url and token), or at a client; returns it."""
    global _default
    c = client or Client.discover(url=url, token=token)
    with _default_lock:
        _default = c
    return c


def is_timeout(e: BaseException) -> bool:
    return isinstance(e, (socket.timeout, TimeoutError))

