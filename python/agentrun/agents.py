"""Agents and their runs: ClaudeAgent (the Nodus seed's Python API) and Run, a handle on one run."""

from __future__ import annotations

import contextlib
import threading
import time
from decimal import Decimal
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Union

from ._client import Client, Event, default_client, is_timeout, path_of
from ._errors import AgentrunError
from .types import RunStatus, Step

API_VERSION = "agentrun.dev/v1"

Money = Union[str, int, Decimal]

# Message kinds send() takes: a follow-up prompt, or the answer to the run's question. Both are
# messages to the server; the run reads the next one where it is (a question, or its next turn).
SEND_KINDS = ("message", "answer")
# What a message to a busy run does (send(..., if_busy=...), an agent's spec.ifBusy).
IF_BUSY_MODES = ("enqueue", "reject", "interrupt", "rollback")


def usd(value: Money, field: str) -> str:
    """A dollar amount as the decimal string the API takes. Floats are refused: money is exact."""
    if isinstance(value, bool) or isinstance(value, float):
        raise AgentrunError("WrongType", f"{field}: give dollars as a string or Decimal (\"0.60\"), not {value!r}",
                            field=field)
    if isinstance(value, (int, Decimal)):
        return str(value)
    if isinstance(value, str):
        return value
    raise AgentrunError("WrongType", f"{field}: want a decimal string, not {type(value).__name__}", field=field)


class Run:
    """A handle on one run, by name: every call asks the server, so any number of handles (in any
    process) may name the same run."""

    def __init__(self, name: str, agent: str = "", client: Optional[Client] = None) -> None:
        self.name = name
        self.agent = agent
        self._client = client
        self._lock = threading.Lock()
        # The seq of the latest message sent through this handle (also in the run's message list;
        # kept so a wait right after a send never depends on reading the list back).
        self._sent_seq = 0

    def __repr__(self) -> str:
        return f"Run({self.name!r}, agent={self.agent!r})"

    @property
    def client(self) -> Client:
        return self._client or default_client()

    def status(self) -> RunStatus:
        """GET the run: its phase, reason, what it waits on, answer preview, cost and turns."""
        return RunStatus.from_json(self.client.request("GET", path_of("agentruns", self.name)))

    def steps(self) -> List[Step]:
        """The run's journal, in order: its computer, each routing and model call, each command."""
        out = self.client.request("GET", path_of("agentruns", self.name, "steps"))
        return [Step.from_json(s) for s in (out or {}).get("items") or []]

    def events(self, after: int = 0) -> List[Event]:
        """The run's timeline so far (up to 1000 entries after seq after)."""
        out = self.client.request("GET", path_of("agentruns", self.name, "events"),
                                  query={"after": str(after)} if after else None)
        return [Event.from_json(e) for e in (out or {}).get("items") or []]

    def follow(self, after: int = 0) -> Iterator[Event]:
        """Stream the timeline as it happens (SSE) until the run finishes."""
        while True:
            try:
                with contextlib.closing(self.client.events(self.name, after)) as stream:
                    for kind, ev in stream:
                        if kind == "end":
                            return
                        after = ev.seq
                        yield ev
            except OSError as e:
                if not is_timeout(e):
                    raise
            # A quiet stream timed out, or the server closed it: resume after the last entry.

    def send(self, kind: str, text: str, key: Optional[str] = None, if_busy: Optional[str] = None) -> bool:
        """Send the run a message: kind "message" (a follow-up prompt, read after the current
        turn) or "answer" (to the question it asked). A key makes the send idempotent: the same key
        delivers once. Returns whether this call delivered it. A finished run refuses with
        AgentRunFinished. if_busy says what the message does if the run has a turn in flight:
        "enqueue" (wait for the turn's end), "reject" (refused with RunBusy, nothing stored),
        "interrupt" (stop the turn now) or "rollback" (discard the turn); None: the agent's
        spec.ifBusy, else enqueue."""
        if kind not in SEND_KINDS:
            raise AgentrunError("Invalid", f"kind {kind!r}: use one of {', '.join(SEND_KINDS)}", field="kind")
        if if_busy is not None and if_busy not in IF_BUSY_MODES:
            raise AgentrunError("Invalid", f"if_busy {if_busy!r}: use one of {', '.join(IF_BUSY_MODES)}", field="ifBusy")
        body: Dict[str, Any] = {"payload": text}
        if key:
            body["messageKey"] = key
        if if_busy:
            body["ifBusy"] = if_busy
        out = self.client.request("POST", path_of("agentruns", self.name, "messages"), body) or {}
        seq = int((out.get("message") or {}).get("seq", 0))
        with self._lock:
            self._sent_seq = max(self._sent_seq, seq)
        return bool(out.get("created"))

    def cancel(self) -> RunStatus:
        """Cancel the run; its computer is deleted. A finished run stays as it is."""
        return RunStatus.from_json(self.client.request("POST", path_of("agentruns", self.name, "cancel")))

    def delete(self) -> None:
        self.client.request("DELETE", path_of("agentruns", self.name))

    def fork(self, at_step: str, *, name: Optional[str] = None, message: Optional[str] = None,
             max_cost_usd: Optional[Money] = None) -> "Run":
        """A new run that holds this run's completed steps up to and including at_step (a key as
        steps() shows it) and its folder as that step left it, and goes on live from there; with
        message, a user message at the fork point first. Copied steps are not billed again. This
        run is not changed. Refused with StepNotFound, StepNotCompleted or RunPurged."""
        body: Dict[str, Any] = {"atStep": at_step}
        if name:
            body["name"] = name
        if message:
            body["message"] = message
        if max_cost_usd is not None:
            body["maxCostUSD"] = usd(max_cost_usd, "max_cost_usd")
        out = self.client.request("POST", path_of("agentruns", self.name, "fork"), body) or {}
        return Run(str((out.get("metadata") or {}).get("name", "")), agent=self.agent, client=self._client)

    def read_file(self, path: str) -> bytes:
        """A file of the run's folder."""
        with self.client._open("GET", path_of("agentruns", self.name, "files") + "/" +
                               "/".join(_quote(p) for p in path.split("/")), headers={"Accept": "*/*"}) as resp:
            return resp.read()  # type: ignore[no-any-return]

    def _last_seq(self) -> int:
        after = 0
        while True:
            page = self.events(after)
            if not page:
                return after
            after = page[-1].seq
            if len(page) < 1000:
                return after

    def _read_seq(self) -> int:
        """The latest message the run has read (its message and question steps record it)."""
        best = 0
        for s in self.steps():
            if s.kind in ("message", "question") and s.state == "Completed" and isinstance(s.result, dict):
                best = max(best, int(s.result.get("seq", 0)))
        return best

    def _latest_message(self) -> int:
        out = self.client.request("GET", path_of("agentruns", self.name, "messages")) or {}
        return max((int(m.get("seq", 0)) for m in out.get("items") or []), default=0)

    def _settled(self) -> Optional[RunStatus]:
        # The latest message the run was sent, through this handle or any other way.
        with self._lock:
            sent = self._sent_seq
        sent = max(sent, self._latest_message())
        # Read the steps before the status: a message read before the status was taken, with the
        # status at rest, means the turn after it is over (the run is Running in between).
        unread = sent > 0 and self._read_seq() < sent
        st = self.status()
        if st.finished:
            return st
        if st.get("cancelRequested"):
            return None  # a cancel is on its way: the rest it is in now is over
        if unread and st.phase == "Waiting" and st.reason in ("Message", "Question"):
            return None  # it has not read our message yet: this rest is from before it
        if st.waiting_on_person or st.turn_done:
            return st
        return None

    def wait(self, timeout: Optional[float] = None) -> RunStatus:
        """Wait until the run has finished, or waits on a person, or (keep-alive) has answered the
        turn of the latest message it was sent (through any handle). Raises AgentrunError Timeout after
        timeout seconds (None: no limit). Follows the timeline over SSE and looks again at each
        change of state."""
        deadline = None if timeout is None else time.monotonic() + timeout
        # Follow from the timeline's end as it was before the first look: any change after that
        # look is a later entry.
        after = self._last_seq()
        while True:
            st = self._settled()
            if st is not None:
                return st
            left = 20.0 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise AgentrunError("Timeout", f"run {self.name} is still {_describe(self.status())} after {timeout}s",
                                    run=self.status())
            try:
                with contextlib.closing(self.client.events(self.name, after, read_timeout=min(20.0, max(left, 0.1)))) as stream:
                    for kind, ev in stream:
                        if kind == "end":
                            break
                        after = ev.seq
                        if ev.type.startswith("run.") or ev.type in ("answer", "step.interrupted", "step.completed"):
                            break
            except AgentrunError as e:
                if e.code not in ("TooManyStreams", "Unreachable"):
                    raise
                time.sleep(0.5)  # no stream to follow now: look again shortly
            except OSError as e:
                if not is_timeout(e):
                    raise

    def answer(self, timeout: Optional[float] = None) -> str:
        """The whole answer of the run's latest turn, once it has one (waits as wait() does). A run
        that failed or was cancelled raises AgentrunError with its reason as the code (ModelError,
        DeadlineExceeded, UserCancelled, ...); one that waits on a person raises its reason
        (Question, Approval, MaxCostReached, Credits, ...)."""
        st = self.wait(timeout)
        if st.phase == "Succeeded" or st.turn_done:
            return self.client.text(path_of("agentruns", self.name, "answer"))
        if st.finished:
            raise AgentrunError(st.reason or st.phase, f"run {self.name} {st.phase.lower()}: {st.message or st.reason}", run=st)
        raise AgentrunError(st.reason or st.phase, f"run {self.name} waits on a person: {_describe(st)}", run=st)


def _quote(p: str) -> str:
    import urllib.parse
    return urllib.parse.quote(p, safe="")


def _describe(st: RunStatus) -> str:
    s = st.phase or "(no phase yet)"
    if st.reason:
        s += f" ({st.reason})"
    w = st.waiting_on or {}
    detail = w.get("question") or w.get("detail") or st.message
    if detail:
        s += f": {detail}"
    return s


class ClaudeAgent:
    """An agent on Claude: ClaudeAgent("helper", system="You are careful.", families=["haiku",
    "sonnet"]) is applied to the server on first use (created, or updated to this definition: a new
    revision when it differs). On the server's access (the default) each prompt is routed to a family
    in families; api_key_secret="anthropic-key" runs it on your own key (model defaults to
    claude-sonnet-4-5). if_busy is the default of what a message to a busy run does (see
    AgentRun.send). spec adds any other field of the Agent's spec as the API names it."""

    def __init__(self, name: str, system: Optional[str] = None, families: Optional[Sequence[str]] = None,
                 api_key_secret: Optional[str] = None, *, model: Optional[str] = None,
                 provider: Optional[str] = None, tools: Optional[Sequence[str]] = None,
                 max_tokens: Optional[int] = None, per_run_max_cost: Optional[Money] = None,
                 if_busy: Optional[str] = None,
                 spec: Optional[Dict[str, Any]] = None, client: Optional[Client] = None) -> None:
        self.name = name
        self.project: Optional[str] = None
        self._client = client
        self._lock = threading.Lock()
        self._ready = False
        self._spec: Optional[Dict[str, Any]] = None
        s: Dict[str, Any] = dict(spec or {})
        if system is not None:
            s["system"] = system
        m: Dict[str, Any] = dict(s.get("model") or {})
        if api_key_secret:
            m.update({"access": "BYOK", "apiKeySecret": api_key_secret})
            m.setdefault("name", model or "claude-sonnet-4-5")
        else:
            m.setdefault("access", "Server")
        if model and not api_key_secret:
            m["name"] = model
        if provider:
            m["provider"] = provider
        if families is not None:
            if isinstance(families, str):
                raise AgentrunError("WrongType", "families: want a list of family names, not a string", field="spec.model.families")
            m["families"] = list(families)
        s["model"] = m
        if tools is not None:
            s["tools"] = list(tools)
        if max_tokens is not None:
            s["maxTokens"] = max_tokens
        if per_run_max_cost is not None:
            s["perRunMaxCostUSD"] = usd(per_run_max_cost, "spec.perRunMaxCostUSD")
        if if_busy is not None:
            s["ifBusy"] = if_busy  # what a message to a busy run does by default (see send)
        self._spec = s

    @classmethod
    def from_name(cls, name: str, project: Optional[str] = None, client: Optional[Client] = None) -> "ClaudeAgent":
        """An agent that already exists on the server (claude-assistant, the ready-made assistant, or
        one applied before), used as it is. agentrun has one project per server: project is kept
        on the handle and not sent."""
        a = cls.__new__(cls)
        a.name, a.project, a._client = name, project, client
        a._lock, a._ready, a._spec = threading.Lock(), False, None
        return a

    def __repr__(self) -> str:
        return f"ClaudeAgent({self.name!r})"

    @property
    def client(self) -> Client:
        return self._client or default_client()

    def ensure(self) -> Dict[str, Any]:
        """Apply the agent (PUT: created or updated) or, for from_name, check it exists; returns the
        agent as the server has it. Runs once per handle; submit() and remote() call it."""
        with self._lock:
            if self._spec is None:
                agent = self.client.request("GET", path_of("agents", self.name))
            else:
                body = {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": self.name}, "spec": self._spec}
                agent = self.client.request("PUT", path_of("agents", self.name), body)
            self._ready = True
            return agent  # type: ignore[no-any-return]

    def _ensure_once(self) -> None:
        if not self._ready:
            self.ensure()

    def get(self) -> Dict[str, Any]:
        """The agent as the server has it (spec, status.revision, status.tools)."""
        return self.client.request("GET", path_of("agents", self.name))  # type: ignore[no-any-return]

    def submit(self, prompt: str, keep_alive: bool = False, *, name: Optional[str] = None,
               deadline: Optional[str] = None, max_cost: Optional[Money] = None,
               group: Optional[str] = None, task_key: Optional[str] = None,
               depends_on: Optional[Iterable[str]] = None, labels: Optional[Dict[str, str]] = None) -> Run:
        """Start a run of prompt and return its handle at once. keep_alive keeps it open for
        follow-ups (send()); deadline is "30m" or an RFC 3339 time; max_cost caps it (default the
        agent's perRunMaxCostUSD); group and task_key make it a task of an AgentGroup, which waits
        for the tasks depends_on names."""
        self._ensure_once()
        spec: Dict[str, Any] = {"agent": self.name, "input": prompt}
        if keep_alive:
            spec["keepAlive"] = True
        if deadline:
            spec["deadline"] = deadline
        if max_cost is not None:
            spec["maxCostUSD"] = usd(max_cost, "spec.maxCostUSD")
        if group:
            spec["group"] = group
        if task_key:
            spec["taskKey"] = task_key
        if depends_on is not None:
            spec["dependsOn"] = list(depends_on)
        body: Dict[str, Any] = {"apiVersion": API_VERSION, "kind": "AgentRun", "spec": spec}
        meta: Dict[str, Any] = {}
        if name:
            meta["name"] = name
        if labels:
            meta["labels"] = dict(labels)
        if meta:
            body["metadata"] = meta
        run = self.client.request("POST", "/v2/agentruns", body)
        return Run(str(run["metadata"]["name"]), self.name, self._client)

    def remote(self, prompt: str, timeout: Optional[float] = None, **kwargs: Any) -> str:
        """Run prompt to the end and return the whole answer (raises AgentrunError when the run
        fails, is cancelled or waits on a person; see Run.answer)."""
        return self.submit(prompt, **kwargs).answer(timeout=timeout)

    def runs(self) -> List[Run]:
        """This agent's runs on the server."""
        out = self.client.request("GET", "/v2/agentruns", query={"agent": self.name}) or {}
        return [Run(str(r["metadata"]["name"]), self.name, self._client) for r in out.get("items") or []]

    def delete(self) -> None:
        """Delete the agent (the store keeps its revisions, so the name stays used)."""
        self.client.request("DELETE", path_of("agents", self.name))
        with self._lock:
            self._ready = False


def wait_all(runs: Iterable[Run], timeout: Optional[float] = None) -> List[RunStatus]:
    """Wait for many runs (each as Run.wait does), within one overall timeout; statuses in order."""
    deadline = None if timeout is None else time.monotonic() + timeout
    out = []
    for r in runs:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        out.append(r.wait(left))
    return out
