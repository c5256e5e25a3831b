"""The parts that need no server: finding one, reading SSE, decoding errors, typed views."""

from __future__ import annotations

import inspect
import json
import os
import tempfile
import unittest
from decimal import Decimal
from unittest import mock

import agentrun
import nodus
from agentrun._client import decode_error


class DiscoverTest(unittest.TestCase):
    def setUp(self) -> None:
        self.home = tempfile.mkdtemp()
        # The test's own data folder, and none of the caller's AGENTRUN_ settings.
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTRUN_")}
        env["AGENTRUN_HOME"] = self.home
        p = mock.patch.dict(os.environ, env, clear=True)
        p.start()
        self.addCleanup(p.stop)

    def write(self, name: str, text: str) -> None:
        with open(os.path.join(self.home, name), "w", encoding="utf-8") as f:
            f.write(text)

    def test_no_server(self) -> None:
        with self.assertRaises(agentrun.AgentrunError) as cm:
            agentrun.Client.discover()
        self.assertEqual(cm.exception.code, "NoServer")
        self.assertIn("agentrun serve", cm.exception.message)

    def test_server_json_and_token_file(self) -> None:
        self.write("server.json", json.dumps({"url": "http://127.0.0.1:7341/", "pid": 1}))
        self.write("token", "art_abc\n")
        c = agentrun.Client.discover()
        self.assertEqual((c.url, c.token), ("http://127.0.0.1:7341", "art_abc"))
        self.assertEqual(c.server_file, os.path.join(self.home, "server.json"))

    def test_server_json_without_url(self) -> None:
        self.write("server.json", json.dumps({"pid": 1}))
        with self.assertRaises(agentrun.AgentrunError) as cm:
            agentrun.Client.discover()
        self.assertEqual(cm.exception.code, "NoServer")
        self.assertIn("has no url", cm.exception.message)

    def test_environment_wins(self) -> None:
        self.write("server.json", json.dumps({"url": "http://127.0.0.1:7341"}))
        self.write("token", "art_file")
        with mock.patch.dict(os.environ, {"AGENTRUN_URL": "localhost:9000/v2", "AGENTRUN_TOKEN": " art_env "}):
            c = agentrun.Client.discover()
        self.assertEqual((c.url, c.token, c.server_file), ("http://localhost:9000", "art_env", None))

    def test_person_session(self) -> None:
        # A person signed in with `agentrun login`: for the local server the session is used
        # whatever port it is on now; for a named server only when the URL is the session's.
        self.write("server.json", json.dumps({"url": "http://127.0.0.1:7342"}))
        self.write("token", "art_file")
        self.write("session.json", json.dumps({"url": "http://127.0.0.1:7340", "user": "admin", "session": "ars_x"}))
        self.assertEqual(agentrun.Client.discover().token, "ars_x")
        with mock.patch.dict(os.environ, {"AGENTRUN_URL": "http://127.0.0.1:7342"}):
            self.assertEqual(agentrun.Client.discover().token, "art_file")
        with mock.patch.dict(os.environ, {"AGENTRUN_URL": "http://127.0.0.1:7340"}):
            self.assertEqual(agentrun.Client.discover().token, "ars_x")
        self.write("session.json", json.dumps({"url": "http://127.0.0.1:7342", "session": "not-a-session"}))
        self.assertEqual(agentrun.Client.discover().token, "art_file")

    def test_unreachable(self) -> None:
        c = agentrun.Client(url="http://127.0.0.1:9", token="t")
        with self.assertRaises(agentrun.AgentrunError) as cm:
            c.request("GET", "/v2/agents")
        self.assertEqual(cm.exception.code, "Unreachable")
        self.assertIsNone(cm.exception.status)


class SSETest(unittest.TestCase):
    def test_parse(self) -> None:
        wire = (b"retry: 1000\n\n"
                b": keepalive\n\n"
                b"id: 3\nevent: answer\ndata: {\"seq\": 3,\r\ndata: \"type\": \"answer\"}\n\n"
                b"event: end\ndata:{\"phase\":\"Succeeded\"}\n\n"
                b"data: last, no blank line")
        msgs = list(agentrun.parse_sse(iter(wire.splitlines(keepends=True))))
        self.assertEqual([(m.event, m.id) for m in msgs], [("answer", "3"), ("end", None), ("message", None)])
        self.assertEqual(json.loads(msgs[0].data), {"seq": 3, "type": "answer"})
        self.assertEqual(msgs[1].data, '{"phase":"Succeeded"}')
        self.assertEqual(msgs[2].data, "last, no blank line")


class ErrorTest(unittest.TestCase):
    def test_server_body(self) -> None:
        e = decode_error(422, b'{"code":"SecretNotFound","message":"no secret","field":"spec.model.apiKeySecret"}')
        self.assertEqual((e.code, e.message, e.field, e.status), ("SecretNotFound", "no secret", "spec.model.apiKeySecret", 422))
        self.assertIn("SecretNotFound", str(e))

    def test_status_only(self) -> None:
        e = decode_error(404, b"404 page not found\n")
        self.assertEqual((e.code, e.message, e.field), ("NotFound", "404 page not found", None))
        self.assertEqual(decode_error(502, b"").code, "Internal")
        self.assertEqual(decode_error(418, b"").code, "HTTP418")

    def test_money_is_not_a_float(self) -> None:
        with self.assertRaises(agentrun.AgentrunError) as cm:
            agentrun.ClaudeAgent("x", per_run_max_cost=0.1)  # type: ignore[arg-type]
        self.assertEqual((cm.exception.code, cm.exception.field), ("WrongType", "spec.perRunMaxCostUSD"))
        a = agentrun.ClaudeAgent("x", per_run_max_cost=Decimal("0.10"))
        self.assertEqual(a._spec and a._spec["perRunMaxCostUSD"], "0.10")

    def test_families_not_a_string(self) -> None:
        with self.assertRaises(agentrun.AgentrunError) as cm:
            agentrun.ClaudeAgent("x", families="haiku")
        self.assertEqual(cm.exception.field, "spec.model.families")


class NamesTest(unittest.TestCase):
    def test_nodus_is_agentrun(self) -> None:
        for name in agentrun.__all__:
            self.assertIs(getattr(nodus, name), getattr(agentrun, name), name)

    def test_byok_spec(self) -> None:
        a = agentrun.ClaudeAgent("mine", system="s", api_key_secret="anthropic-key")
        self.assertEqual(a._spec, {"system": "s", "model": {"access": "BYOK", "apiKeySecret": "anthropic-key",
                                                             "name": "claude-sonnet-4-5"}})

    def test_views_read_any_field(self) -> None:
        st = agentrun.GroupStatus.from_json({"metadata": {"name": "g"}, "status": {
            "phase": "Succeeded", "counts": {"succeeded": 2},
            "evaluation": {"cases": 2, "pending": 0, "passRate": 0.5, "perTask": []}}})
        assert st.evaluation is not None
        self.assertEqual((st.phase, st.counts.succeeded, st.evaluation.pending), ("Succeeded", 2, 0))
        self.assertEqual(st.evaluation.get("passRate"), 0.5)
        self.assertEqual(st.evaluation.get("pass_rate"), 0.5)
        self.assertIsNone(st.evaluation.get("meanReward"))
        self.assertEqual(st.evaluation.get("per_task"), [])


class TypedTest(unittest.TestCase):
    """No type checker ships here, so this holds the promise py.typed makes: every function and
    method of the package annotates each parameter and its return."""

    def test_annotations(self) -> None:
        import agentrun._client as c
        import agentrun.agents as a
        import agentrun.groups as g
        import agentrun.types as t
        missing = []
        for mod in (c, a, g, t):
            for _, obj in inspect.getmembers(mod):
                if getattr(obj, "__module__", None) != mod.__name__:
                    continue
                fns = [obj] if inspect.isfunction(obj) else [
                    f for f in vars(obj).values() if inspect.isfunction(f) or isinstance(f, (staticmethod, classmethod, property))
                ] if inspect.isclass(obj) else []
                for f in fns:
                    f = f.fget if isinstance(f, property) else getattr(f, "__func__", f)
                    if f.__code__.co_filename != mod.__file__:
                        continue  # made by @dataclass
                    sig = inspect.signature(f)
                    for p in sig.parameters.values():
                        if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty:
                            missing.append(f"{f.__qualname__}({p.name})")
                    if sig.return_annotation is inspect.Signature.empty:
                        missing.append(f"{f.__qualname__} -> ?")
        self.assertEqual(missing, [])
        for pkg in ("agentrun", "nodus"):
            mod = __import__(pkg)
            self.assertTrue(os.path.exists(os.path.join(os.path.dirname(mod.__file__), "py.typed")), pkg)


if __name__ == "__main__":
    unittest.main()
