"""AgentGroups: many runs of one agent at once under one cost cap, and evaluation batches."""

from __future__ import annotations

import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from ._client import Client, default_client, path_of
from ._errors import AgentrunError
from .agents import API_VERSION, ClaudeAgent, Money, Run, usd
from .types import EvalCase, EvaluationStatus, GroupStatus

# How often wait() looks at a group: groups have no event stream of their own.
POLL_SECONDS = 0.5


class AgentGroup:
    """A handle on one AgentGroup. AgentGroup.create makes it; AgentGroup(name) names one that
    exists."""

    def __init__(self, name: str, agent: str = "", client: Optional[Client] = None) -> None:
        self.name = name
        self.agent = agent
        self._client = client

    def __repr__(self) -> str:
        return f"AgentGroup({self.name!r}, agent={self.agent!r})"

    @property
    def client(self) -> Client:
        return self._client or default_client()

    @classmethod
    def create(cls, name: str, agent: Union[str, ClaudeAgent], max_active: Optional[int] = None,
               max_cost: Optional[Money] = None, evaluation: Optional[Mapping[str, Any]] = None, *,
               max_pending: Optional[int] = None, labels: Optional[Dict[str, str]] = None,
               client: Optional[Client] = None) -> "AgentGroup":
        """Create a group of agent's runs: at most max_active at once (default 10), together under
        max_cost dollars ("0.60"). evaluation={"environment": "NAME@VERSION", "split", "tasks",
        "repetitions", "seed", "timeout"} makes it an evaluation batch: the server draws the tasks,
        runs them, grades the answers and seals the group itself. An existing name raises
        AlreadyExists."""
        agent_name = agent.name if isinstance(agent, ClaudeAgent) else agent
        if isinstance(agent, ClaudeAgent):
            agent._ensure_once()
            client = client or agent._client
        limits: Dict[str, Any] = {}
        if max_active is not None:
            limits["maxActive"] = max_active
        if max_pending is not None:
            limits["maxPending"] = max_pending
        if max_cost is not None:
            limits["maxCostUSD"] = usd(max_cost, "spec.limits.maxCostUSD")
        spec: Dict[str, Any] = {"agent": agent_name}
        if limits:
            spec["limits"] = limits
        if evaluation is not None:
            spec["evaluation"] = dict(evaluation)
        meta: Dict[str, Any] = {"name": name}
        if labels:
            meta["labels"] = dict(labels)
        g = cls(name, agent_name, client)
        g.client.request("POST", "/v2/agentgroups", {"apiVersion": API_VERSION, "kind": "AgentGroup",
                                                    "metadata": meta, "spec": spec})
        return g

    def status(self) -> GroupStatus:
        return GroupStatus.from_json(self.client.request("GET", path_of("agentgroups", self.name)))

    def get(self) -> Dict[str, Any]:
        """The group as the server has it."""
        return self.client.request("GET", path_of("agentgroups", self.name))  # type: ignore[no-any-return]

    def submit(self, prompt: str, task_key: str, depends_on: Optional[Iterable[str]] = None,
               **kwargs: Any) -> Run:
        """Add a task: a run of the group's agent named GROUP-TASKKEY, started when a slot and the
        cost cap allow and every task in depends_on has succeeded."""
        agent = self.agent or str(self.get()["spec"]["agent"])
        a = ClaudeAgent.from_name(agent, client=self._client)
        a._ready = True  # the group's agent exists: the group could not have been made otherwise
        return a.submit(prompt, group=self.name, task_key=task_key, depends_on=depends_on, **kwargs)

    def submit_many(self, tasks: Sequence[Mapping[str, Any]], idempotency_key: Optional[str] = None) -> List[Run]:
        """Add up to 100 tasks in one request, all or nothing, in order (list each after the tasks
        it depends on): each {"task_key", "prompt", "depends_on"?}. An idempotency key makes a
        repeat return the first batch."""
        agent = self.agent or str(self.get()["spec"]["agent"])
        items = []
        for i, t in enumerate(tasks):
            if "task_key" not in t or "prompt" not in t:
                raise AgentrunError("Required", f"tasks[{i}] needs task_key and prompt", field=f"items[{i}]")
            spec: Dict[str, Any] = {"agent": agent, "group": self.name, "taskKey": t["task_key"], "input": t["prompt"]}
            if t.get("depends_on") is not None:
                spec["dependsOn"] = list(t["depends_on"])
            items.append({"apiVersion": API_VERSION, "kind": "AgentRun", "spec": spec})
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        out = self.client.request("POST", "/v2/agentruns", {"apiVersion": API_VERSION, "kind": "AgentRunList", "items": items},
                                  headers=headers) or {}
        return [Run(str(r["metadata"]["name"]), agent, self._client) for r in out.get("items") or []]

    def seal(self) -> GroupStatus:
        """Say no more runs are coming (irreversible): the group finishes once they have."""
        return GroupStatus.from_json(self.client.request("PATCH", path_of("agentgroups", self.name),
                                                         {"spec": {"sealed": True}},
                                                         headers={"Content-Type": "application/merge-patch+json"}))

    def patch(self, patch: Mapping[str, Any]) -> GroupStatus:
        """A JSON merge patch of the group ({"spec": {"limits": {"maxActive": 4}}})."""
        return GroupStatus.from_json(self.client.request("PATCH", path_of("agentgroups", self.name), dict(patch),
                                                         headers={"Content-Type": "application/merge-patch+json"}))

    def wait(self, timeout: Optional[float] = None) -> GroupStatus:
        """Wait until the group is Succeeded, Failed or Cancelled; raises AgentrunError Timeout
        after timeout seconds (None: no limit). A plain group finishes only once sealed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            st = self.status()
            if st.finished:
                return st
            if deadline is not None and time.monotonic() >= deadline:
                raise AgentrunError("Timeout", f"group {self.name} is still {st.phase} after {timeout}s "
                                    f"(counts {st.counts.raw})", run=st)
            time.sleep(POLL_SECONDS if deadline is None else max(0.0, min(POLL_SECONDS, deadline - time.monotonic())))

    def results(self) -> List[EvalCase]:
        """An evaluation group's cases (a plain group raises NotFound)."""
        out = self.client.request("GET", path_of("agentgroups", self.name, "results")) or {}
        return [EvalCase.from_json(c) for c in out.get("items") or []]

    def evaluation(self) -> Optional[EvaluationStatus]:
        """An evaluation group's summary, with the per-task results."""
        out = self.client.request("GET", path_of("agentgroups", self.name, "results")) or {}
        return EvaluationStatus.from_json(out.get("evaluation"))

    def runs(self) -> List[Run]:
        """The group's runs."""
        out = self.client.request("GET", "/v2/agentruns", query={"fieldSelector": "spec.group=" + self.name}) or {}
        return [Run(str(r["metadata"]["name"]), str(r["spec"]["agent"]), self._client) for r in out.get("items") or []]

    def cancel(self) -> GroupStatus:
        """Cancel every unfinished run; finished ones keep their answers."""
        return GroupStatus.from_json(self.client.request("POST", path_of("agentgroups", self.name, "cancel")))

    def delete(self) -> None:
        """Delete the group with all its runs."""
        self.client.request("DELETE", path_of("agentgroups", self.name))
