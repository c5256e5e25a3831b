"""The one exception the client raises."""

from __future__ import annotations

from typing import Any, Optional


class AgentrunError(Exception):
    """A failed call. code is the server's stable code (NotFound, AgentRunFinished, ...: the table in
    docs/limits-and-errors.md), message its text and field the path of the field at fault; status is
    the HTTP status (None when the client decided: a run that failed raises its status.reason as the
    code, such as ModelError or UserCancelled; a wait that ran out raises Timeout; no server found,
    NoServer; a server that cannot be reached, Unreachable)."""

    def __init__(self, code: str, message: str, field: Optional[str] = None, status: Optional[int] = None,
                 run: Optional[Any] = None) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.field = field
        self.status = status
        # run: the run's last status, when the error is about a run's outcome.
        self.run = run

    def __str__(self) -> str:
        s = f"{self.code}: {self.message}"
        if self.field:
            s += f" (field {self.field})"
        if self.status is not None:
            s += f" [HTTP {self.status}]"
        return s
