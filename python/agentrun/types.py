"""Typed views of the server's resources. Each keeps the JSON it was made from: .get(key) reads any
field by the server's name ("passRate") or its snake_case ("pass_rate"), so fields this client
does not name yet stay reachable."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

_CAMEL = re.compile(r"_([a-z0-9])")


def _camel(key: str) -> str:
    return _CAMEL.sub(lambda m: m.group(1).upper(), key)


def _opt_float(v: Any) -> Optional[float]:
    return None if v is None else float(v)


@dataclass
class View:
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    def get(self, key: str, default: Any = None) -> Any:
        if key in self.raw:
            return self.raw[key]
        return self.raw.get(_camel(key), default)

    def __getitem__(self, key: str) -> Any:
        if key in self.raw:
            return self.raw[key]
        return self.raw[_camel(key)]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and (key in self.raw or _camel(key) in self.raw)


def _dict(v: Any) -> Dict[str, Any]:
    return dict(v) if isinstance(v, Mapping) else {}


@dataclass
class Cost(View):
    """Model spend in decimal dollars as the server writes them ("0.000123", "unknown",
    "at least 0.01"): strings, never floats, so no figure is rounded on the way."""

    total_usd: str = ""
    vendor_usd: str = ""
    limit_usd: str = ""
    needed_usd: str = ""
    billing: str = ""

    @staticmethod
    def from_json(d: Any) -> Optional["Cost"]:
        if not isinstance(d, Mapping):
            return None
        return Cost(raw=dict(d), total_usd=str(d.get("totalUSD", "")), vendor_usd=str(d.get("vendorUSD", "")),
                    limit_usd=str(d.get("limitUSD", "")), needed_usd=str(d.get("neededUSD", "")),
                    billing=str(d.get("billing", "")))


@dataclass
class Turn(View):
    """One prompt answered: the model that served it, how it was chosen, its cost."""

    index: int = 0
    model: str = ""
    family: str = ""
    chosen_by: str = ""
    cost_usd: str = ""

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Turn":
        return Turn(raw=dict(d), index=int(d.get("index", 0)), model=str(d.get("model", "")),
                    family=str(d.get("family", "")), chosen_by=str(d.get("chosenBy", "")),
                    cost_usd=str(d.get("costUSD", "")))


@dataclass
class RunStatus(View):
    """A run's status: phase (Queued, Running, Waiting, NeedsResolution, Succeeded, Failed,
    Cancelled), the reason for it, what it waits on, its answer preview, cost and turns."""

    name: str = ""
    agent: str = ""
    phase: str = ""
    reason: str = ""
    message: str = ""
    waiting_on: Optional[Dict[str, Any]] = None
    answer_preview: Optional[str] = None
    cost: Optional[Cost] = None
    turns: List[Turn] = field(default_factory=list)
    console_url: str = ""

    @staticmethod
    def from_json(run: Mapping[str, Any]) -> "RunStatus":
        st = _dict(run.get("status"))
        ans = st.get("answer")
        return RunStatus(raw=st, name=str(_dict(run.get("metadata")).get("name", "")),
                         agent=str(_dict(run.get("spec")).get("agent", "")),
                         phase=str(st.get("phase", "")), reason=str(st.get("reason", "")),
                         message=str(st.get("message", "")), waiting_on=st.get("waitingOn"),
                         answer_preview=ans.get("preview", "") if isinstance(ans, Mapping) else None,
                         cost=Cost.from_json(st.get("cost")),
                         turns=[Turn.from_json(t) for t in st.get("turns") or [] if isinstance(t, Mapping)],
                         console_url=str(st.get("consoleURL", "")))

    @property
    def finished(self) -> bool:
        return self.phase in ("Succeeded", "Failed", "Cancelled")

    @property
    def waiting_on_person(self) -> bool:
        """Waits on a person: a question, an approval, its cap, credits, the store's disk, a model
        key, or an interrupted step (the CLI's exit code 8)."""
        if self.phase == "NeedsResolution":
            return True
        return self.phase == "Waiting" and self.reason in (
            "Question", "Approval", "MaxCostReached", "Credits", "StoreFull", "ModelKeyMissing")

    @property
    def turn_done(self) -> bool:
        """A keep-alive run that answered its turn and waits for the next message."""
        return self.phase == "Waiting" and self.reason == "Message"


@dataclass
class Step(View):
    """One journal step: each model call, tool call, message and answer, in order."""

    seq: int = 0
    key: str = ""
    kind: str = ""
    state: str = ""
    title: str = ""
    attempt: int = 0
    result: Any = None
    error: str = ""
    # The run a fork copied this step from ("" for a step of the run's own).
    copied_from: str = ""

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Step":
        return Step(raw=dict(d), seq=int(d.get("seq", 0)), key=str(d.get("key", "")), kind=str(d.get("kind", "")),
                    state=str(d.get("state", "")), title=str(d.get("title", "")), attempt=int(d.get("attempt", 0)),
                    result=d.get("result"), error=str(d.get("error", "")), copied_from=str(d.get("copiedFrom", "")))


@dataclass
class GroupCounts(View):
    queued: int = 0
    active: int = 0
    waiting: int = 0
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0

    @staticmethod
    def from_json(d: Any) -> "GroupCounts":
        d = _dict(d)
        return GroupCounts(raw=d, **{k: int(d.get(k, 0)) for k in
                                     ("queued", "active", "waiting", "succeeded", "failed", "cancelled")})


@dataclass
class EvaluationStatus(View):
    """An evaluation group's summary. pass_rate and mean_reward are over scored cases only, None
    while none is scored."""

    environment: str = ""
    split: str = ""
    seed: int = 0
    cases: int = 0
    pending: int = 0
    scored: int = 0
    passed: int = 0
    unscored: int = 0
    timed_out: int = 0
    pass_rate: Optional[float] = None
    mean_reward: Optional[float] = None
    error: str = ""

    @staticmethod
    def from_json(d: Any) -> Optional["EvaluationStatus"]:
        if not isinstance(d, Mapping):
            return None
        return EvaluationStatus(raw=dict(d), environment=str(d.get("environment", "")), split=str(d.get("split", "")),
                                seed=int(d.get("seed", 0)), cases=int(d.get("cases", 0)),
                                pending=int(d.get("pending", 0)), scored=int(d.get("scored", 0)),
                                passed=int(d.get("passed", 0)), unscored=int(d.get("unscored", 0)),
                                timed_out=int(d.get("timedOut", 0)), pass_rate=_opt_float(d.get("passRate")),
                                mean_reward=_opt_float(d.get("meanReward")), error=str(d.get("error", "")))


@dataclass
class GroupStatus(View):
    """A group's status: phase (Running, Succeeded, Failed, Cancelling, Cancelled), counts of its
    runs by state, why queued runs wait, its cost, and for an evaluation group its summary."""

    name: str = ""
    phase: str = ""
    reason: str = ""
    message: str = ""
    counts: GroupCounts = field(default_factory=GroupCounts)
    blocked_reasons: Dict[str, int] = field(default_factory=dict)
    cost: Optional[Cost] = None
    evaluation: Optional[EvaluationStatus] = None

    @staticmethod
    def from_json(g: Mapping[str, Any]) -> "GroupStatus":
        st = _dict(g.get("status"))
        return GroupStatus(raw=st, name=str(_dict(g.get("metadata")).get("name", "")),
                           phase=str(st.get("phase", "")), reason=str(st.get("reason", "")),
                           message=str(st.get("message", "")), counts=GroupCounts.from_json(st.get("counts")),
                           blocked_reasons={str(k): int(v) for k, v in _dict(st.get("blockedReasons")).items()},
                           cost=Cost.from_json(st.get("cost")), evaluation=EvaluationStatus.from_json(st.get("evaluation")))

    @property
    def finished(self) -> bool:
        return self.phase in ("Succeeded", "Failed", "Cancelled")


@dataclass
class EvalCase(View):
    """One evaluation case: its task, repetition, state (pending, scored, unscored, evaluation
    timeout), verdict (pass or fail, when scored), reward, the grader's evidence, and its run."""

    task_id: str = ""
    repetition: int = 0
    run: str = ""
    state: str = ""
    verdict: str = ""
    reward: Optional[float] = None
    evidence: str = ""
    detail: str = ""

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "EvalCase":
        return EvalCase(raw=dict(d), task_id=str(d.get("taskId", "")), repetition=int(d.get("repetition", 0)),
                        run=str(d.get("run", "")), state=str(d.get("state", "")), verdict=str(d.get("verdict", "")),
                        reward=_opt_float(d.get("reward")), evidence=str(d.get("evidence", "")),
                        detail=str(d.get("detail", "")))
