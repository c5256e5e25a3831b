"""The client against a real server (found from AGENTRUN_URL and AGENTRUN_TOKEN) whose model is the
scripted model server running tests/model-script.yaml. The Go test e2e/clients/python_client_test.go
starts both and runs this suite; without AGENTRUN_URL every test here is skipped."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest
from datetime import datetime
from decimal import Decimal
from typing import Any

import agentrun
import nodus

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")
# Bounds for the waits, so a broken server fails the test instead of hanging it.
WAIT = 120.0


def _time(s: str) -> datetime:
    """An RFC 3339 time as Go writes it (nanoseconds, Z), for any Python 3.9+."""
    m = re.match(r"^(.*?)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$", s)
    assert m, s
    frac = (m.group(2) or "0")[:6].ljust(6, "0")
    tz = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.fromisoformat(f"{m.group(1)}.{frac}{tz}")


@unittest.skipUnless(os.environ.get("AGENTRUN_URL"), "no server: set AGENTRUN_URL and AGENTRUN_TOKEN (e2e/clients/python_client_test.go does)")
class LiveTest(unittest.TestCase):
    def setUp(self) -> None:
        agentrun.configure()  # from the environment, as a user's program would find it

    def error(self, fn: Any, *args: Any, **kwargs: Any) -> agentrun.AgentrunError:
        with self.assertRaises(agentrun.AgentrunError) as cm:
            fn(*args, **kwargs)
        return cm.exception

    # The seed's "From Python" snippet, run as a program, then checked through the API.
    def test_seed_snippet(self) -> None:
        out = subprocess.run([sys.executable, os.path.join(EXAMPLES, "from_python.py")], capture_output=True,
                             text=True, timeout=WAIT)
        self.assertEqual(out.returncode, 0, out.stderr)
        # The model's bash call ran python3 --version in the run's sandbox; the answer quotes it.
        self.assertRegex(out.stdout, r"^The sandbox runs exit code 0\nPython 3\.\d+")
        agent = nodus.ClaudeAgent.from_name("helper")
        spec = agent.get()["spec"]
        self.assertEqual((spec["system"], spec["model"]["families"]), ("You are careful.", ["haiku", "sonnet"]))
        by_input = {r.client.request("GET", "/v2/agentruns/" + r.name)["spec"]["input"]: r for r in agent.runs()}
        self.assertEqual(len(by_input), 2, by_input)
        remote, kept = by_input["Use the shell to print the Python version"], by_input["Summarize the logs"]
        self.assertEqual(remote.status().phase, "Succeeded")
        self.assertIn("python3 --version", " ".join(s.title for s in remote.steps()))
        # The snippet's program ended right after its send: a new handle waits for that turn.
        st = kept.wait(timeout=WAIT)
        self.assertTrue(st.turn_done, st)
        self.assertEqual(kept.answer(), "Staging: Now the staging logs -- all quiet.")
        self.assertEqual([s.key for s in kept.steps() if s.kind == "message"], ["m0"])
        self.assertEqual(len(st.turns), 2)
        kept.cancel()
        self.assertEqual(kept.wait(timeout=WAIT).phase, "Cancelled")
        e = self.error(kept.send, "message", "too late")
        self.assertEqual((e.code, e.status), ("AgentRunFinished", 409))
        e = self.error(kept.answer)
        self.assertEqual(e.code, "UserCancelled")

    def test_keep_alive_turns_and_keys(self) -> None:
        agent = agentrun.ClaudeAgent("py-keep", system="You are careful.", families=["haiku"])
        run = agent.submit("Summarize the logs", keep_alive=True)
        self.assertEqual(run.answer(timeout=WAIT), "The logs show two restarts and no errors.")
        self.assertTrue(run.send("message", "second", key="k-2"))
        self.assertFalse(run.send("message", "second", key="k-2"))  # the same key delivers once
        self.assertEqual(run.answer(timeout=WAIT), "Staging: second -- all quiet.")
        # Waiting for its next message, the run is not busy: reject is taken as any message.
        self.assertTrue(run.send("message", "third", if_busy="reject"))
        self.assertEqual(run.answer(timeout=WAIT), "Third turn: third")
        st = run.status()
        self.assertEqual([t.family for t in st.turns], ["haiku"] * 3)
        assert st.cost is not None
        self.assertEqual(st.cost.billing, "credits")
        run.cancel()
        self.assertEqual(run.wait(timeout=WAIT).phase, "Cancelled")

    def test_ready_made_assistant(self) -> None:
        agent = nodus.ClaudeAgent.from_name("claude-assistant", project="nodus")
        self.assertEqual(agent.remote("Echo: from the template", timeout=WAIT), "Echo: from the template")
        self.assertEqual(agent.get()["metadata"]["labels"].get("agentrun.dev/template"), "builtin")
        e = self.error(nodus.ClaudeAgent.from_name("no-such-agent").remote, "Echo: x")
        self.assertEqual((e.code, e.status), ("NotFound", 404))

    def test_own_key_needs_its_secret(self) -> None:
        agent = nodus.ClaudeAgent("py-own-key", system="You are careful.", api_key_secret="no-such-secret")
        e = self.error(agent.remote, "Echo: mine")
        self.assertEqual((e.code, e.field, e.status), ("SecretNotFound", "spec.model.apiKeySecret", 422))

    @unittest.skipUnless(os.environ.get("AGENTRUN_TEST_SETUP_CODE"), "needs the server's setup code to sign a person in")
    def test_own_key(self) -> None:
        c = agentrun.default_client()
        # Only a signed-in person writes secrets; the API token may not.
        e = self.error(c.request, "PUT", "/v2/secrets/anthropic-key", {"data": {"ANTHROPIC_API_KEY": "sk-test"}})
        self.assertEqual((e.code, e.status), ("PersonRequired", 403))
        login = c.request("POST", "/v2/login", {"user": "admin", "password": "correct horse battery",
                                                 "setupCode": os.environ["AGENTRUN_TEST_SETUP_CODE"]})
        person = agentrun.Client(url=c.url, token=login["session"])
        person.request("PUT", "/v2/secrets/anthropic-key", {"data": {"ANTHROPIC_API_KEY": "sk-test"}})
        agent = nodus.ClaudeAgent("py-byok", system="You are careful.", api_key_secret="anthropic-key")
        run = agent.submit("Echo: on my key")
        self.assertEqual(run.answer(timeout=WAIT), "Echo: on my key")
        st = run.status()
        assert st.cost is not None
        self.assertEqual((st.cost.billing, st.turns[0].chosen_by, st.turns[0].model), ("none", "agent", "claude-sonnet-4-5"))

    def test_question(self) -> None:
        agent = agentrun.ClaudeAgent("py-asker", tools=["ask_person"])
        run = agent.submit("Ask me which region to cover.")
        e = self.error(run.answer, timeout=WAIT)
        self.assertEqual(e.code, "Question")
        self.assertEqual(e.run.waiting_on["question"], "Which region should I cover?")
        run.send("answer", "Europe")
        self.assertEqual(run.answer(timeout=WAIT), "I will cover Europe.")
        self.assertEqual(run.status().phase, "Succeeded")

    # A fork at the run's answer copies every step: it answers the same at no cost, and the
    # original is untouched; a key the run has no step for is refused with its code.
    def test_fork(self) -> None:
        run = agentrun.ClaudeAgent("py-geo", families=["haiku"]).submit("What is the capital of France?")
        self.assertEqual(run.answer(timeout=WAIT), "Paris.")
        last = [s for s in run.steps() if s.kind == "model"][-1]
        fork = run.fork(last.key, max_cost_usd="0.10")
        self.assertNotEqual(fork.name, run.name)
        self.assertEqual(fork.answer(timeout=WAIT), "Paris.")
        steps = fork.steps()
        self.assertTrue(steps and all(s.copied_from == run.name for s in steps), steps)
        self.assertEqual([s.key for s in steps], [s.key for s in run.steps()])
        self.assertEqual(Decimal(fork.status().cost.total_usd), 0)
        e = self.error(run.fork, "t9/tool/0")
        self.assertEqual((e.code, e.status, e.field), ("StepNotFound", 404, "atStep"))

    def test_errors_carry_the_server_code(self) -> None:
        e = self.error(agentrun.Run("no-such-run").status)
        self.assertEqual((e.code, e.status), ("NotFound", 404))
        e = self.error(agentrun.ClaudeAgent("py-bad", families=["haiku", "gpt"]).ensure)
        self.assertEqual((e.code, e.field, e.status), ("Invalid", "spec.model.families[1]", 422))
        e = self.error(agentrun.ClaudeAgent("py-bad", spec={"colour": "red"}).ensure)
        self.assertEqual((e.code, e.status), ("UnknownField", 422))
        self.assertIn("colour", e.field or e.message)
        e = self.error(agentrun.ClaudeAgent("py-echo").submit, "x" * ((256 << 10) + 1))
        self.assertEqual((e.code, e.status), ("PayloadTooLarge", 413))
        e = self.error(agentrun.Run("no-such-run").send, "shout", "hi")
        self.assertEqual((e.code, e.field), ("Invalid", "kind"))
        e = self.error(agentrun.Run("no-such-run").send, "message", "hi", if_busy="soon")
        self.assertEqual((e.code, e.field), ("Invalid", "ifBusy"))
        e = self.error(agentrun.ClaudeAgent("py-bad", if_busy="soon").ensure)
        self.assertEqual((e.code, e.field, e.status), ("Invalid", "spec.ifBusy", 422))
        e = self.error(agentrun.AgentGroup.create, "py-group-of-nobody", agent="nobody")
        self.assertEqual((e.code, e.status), ("AgentNotFound", 404))
        wrong = agentrun.Client(url=agentrun.default_client().url, token="wrong")
        e = self.error(wrong.request, "GET", "/v2/agents")
        self.assertEqual((e.code, e.status), ("Unauthorized", 401))

    def test_timeout_and_cancel(self) -> None:
        run = agentrun.ClaudeAgent("py-slow").submit("Take your time")
        e = self.error(run.wait, timeout=0.5)
        self.assertEqual((e.code, e.status), ("Timeout", None))
        self.assertIn(e.run.phase, ("Queued", "Running"))
        run.cancel()
        st = run.wait(timeout=WAIT)
        self.assertEqual((st.phase, st.reason), ("Cancelled", "UserCancelled"))
        types = [ev.type for ev in run.follow()]
        self.assertIn("run.cancel_requested", types)
        self.assertEqual(types[-1], "run.cancelled")

    # The "Run agents in parallel" pattern: many submits, then the waits.
    def test_many_submits(self) -> None:
        agent = nodus.ClaudeAgent("py-echo", families=["haiku"])
        runs = [agent.submit(f"Echo: task {i}") for i in range(8)]
        statuses = agentrun.wait_all(runs, timeout=WAIT)
        self.assertEqual([s.phase for s in statuses], ["Succeeded"] * 8)
        self.assertEqual([r.answer() for r in runs], [f"Echo: task {i}" for i in range(8)])
        self.assertEqual(len({r.name for r in runs}), 8)

    # The seed's parallel-agents group, written in Python.
    def test_group(self) -> None:
        worker = nodus.ClaudeAgent("py-parallel-worker",
                                   system="Follow the task's requested answer format; otherwise answer in one short sentence.",
                                   families=["haiku"], max_tokens=1024, per_run_max_cost="0.10")
        group = nodus.AgentGroup.create("py-parallel", agent=worker, max_active=2, max_cost="0.60")
        a = group.submit("What is the capital of France?", task_key="a")
        b = group.submit("What is the capital of Japan?", task_key="b")
        c = group.submit("Say in one sentence that both questions have been answered.", task_key="c", depends_on=["a", "b"])
        self.assertEqual([r.name for r in (a, b, c)], ["py-parallel-a", "py-parallel-b", "py-parallel-c"])
        e = self.error(group.submit, "again", task_key="a")
        self.assertEqual((e.code, e.status), ("AlreadyExists", 409))
        group.seal()
        st = group.wait(timeout=WAIT)
        self.assertEqual((st.phase, st.counts.succeeded, st.counts.failed), ("Succeeded", 3, 0))
        assert st.cost is not None
        self.assertEqual(st.cost.limit_usd, "0.60")
        self.assertEqual([r.answer() for r in (a, b, c)], ["Paris.", "Tokyo.", "Both questions have been answered."])
        started = _time(c.status()["startedAt"])
        for dep in (a, b):
            self.assertGreaterEqual(started, _time(dep.status()["finishedAt"]))
        self.assertEqual(sorted(r.name for r in group.runs()), ["py-parallel-a", "py-parallel-b", "py-parallel-c"])
        e = self.error(group.submit, "late", task_key="d")
        self.assertEqual((e.code, e.status), ("GroupSealed", 409))
        e = self.error(group.results)
        self.assertEqual(e.code, "NotFound")  # not an evaluation group
        group.delete()
        self.assertEqual(self.error(a.status).code, "NotFound")

    def test_group_batch(self) -> None:
        agent = nodus.ClaudeAgent("py-batch-worker", families=["haiku"])
        agent.ensure()  # a group named by a string needs the agent there already
        group = nodus.AgentGroup.create("py-batch", agent="py-batch-worker", max_active=3)
        tasks = [{"task_key": f"t{i}", "prompt": f"Echo: batch {i}"} for i in range(5)]
        tasks.append({"task_key": "last", "prompt": "Echo: after all", "depends_on": [f"t{i}" for i in range(5)]})
        runs = group.submit_many(tasks, idempotency_key="py-batch-1")
        again = group.submit_many(tasks, idempotency_key="py-batch-1")  # a repeat returns the first batch
        self.assertEqual([r.name for r in again], [r.name for r in runs])
        group.seal()
        self.assertEqual(group.wait(timeout=WAIT).phase, "Succeeded")
        self.assertEqual([r.answer() for r in runs], [f"Echo: batch {i}" for i in range(5)] + ["Echo: after all"])
        # Cancelling leaves the finished runs as they are, with their answers.
        self.assertIn(group.cancel().phase, ("Cancelling", "Cancelled"))
        self.assertEqual(runs[0].status().phase, "Succeeded")
        self.assertEqual(runs[0].answer(), "Echo: batch 0")
        group.delete()
        agent.delete()


if __name__ == "__main__":
    unittest.main()
