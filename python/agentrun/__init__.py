"""Python client for agentrun (https://agentrun.dev): the Nodus seed's Python API over the server's
/v2 HTTP API, standard library only.

    import agentrun   # or: import nodus
    agent = agentrun.ClaudeAgent("helper", system="You are careful.", families=["haiku", "sonnet"])
    print(agent.remote("Use the shell to print the Python version"))

The server is found as the CLI finds it: AGENTRUN_URL and AGENTRUN_TOKEN, else server.json and
token in the data folder (AGENTRUN_HOME or ~/.agentrun); configure() points elsewhere. Every
failure raises AgentrunError, carrying the server's code, message, field and HTTP status.
"""

from ._client import Client, Event, configure, data_dir, default_client, parse_sse
from ._errors import AgentrunError
from .agents import ClaudeAgent, Run, wait_all
from .groups import AgentGroup
from .types import (Cost, EvalCase, EvaluationStatus, GroupCounts, GroupStatus, RunStatus, Step, Turn,
                    View)

# Shorter names for the same things.
Agent = ClaudeAgent
Error = AgentrunError

__all__ = ["Agent", "AgentGroup", "AgentrunError", "ClaudeAgent", "Client", "Cost", "Error", "EvalCase",
           "EvaluationStatus", "Event", "GroupCounts", "GroupStatus", "Run", "RunStatus", "Step", "Turn", "View",
           "configure", "data_dir", "default_client", "parse_sse", "wait_all"]
__version__ = "0.1.0"
