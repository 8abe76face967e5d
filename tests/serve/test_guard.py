"""The gate (steptable.serve.guard) on its own: loopback names, the token from the query, a header or the path of
the page's assets and websocket (no cookie), the Host on a loopback bind, a websocket's Origin, the session cap."""

from __future__ import annotations

import pytest

pytest.importorskip("aiohttp")

from aiohttp.test_utils import make_mocked_request

from steptable.serve.guard import Gate, is_loopback, new_token

TOKEN = "t0ken-for-the-test-0123456789"


def test_loopback_names_and_new_tokens() -> None:
    assert all(is_loopback(h) for h in ("localhost", "app.localhost", "127.0.0.1", "[::1]", "::1"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "evil.example", "192.168.1.2", ""))
    assert len(new_token()) >= 40 and new_token() != new_token()


def test_what_the_gate_lets_through() -> None:
    gate = Gate(TOKEN, loopback=True, max_sessions=1)
    host = {"Host": "localhost:8000"}
    assert gate.allowed(make_mocked_request("GET", f"/?token={TOKEN}", headers=host)) is None
    assert gate.allowed(make_mocked_request("GET", "/", headers={**host, "Authorization": f"token {TOKEN}"})) is None
    assert gate.allowed(make_mocked_request("GET", f"/a/{TOKEN}/js/textual.js", headers=host)) is None
    assert gate.allowed(make_mocked_request("GET", "/a/wrong/js/textual.js", headers=host))[0] == 401  # type: ignore[index]
    assert gate.allowed(make_mocked_request("GET", f"/b/{TOKEN}/js/textual.js", headers=host))[0] == 401  # type: ignore[index]
    cookie = {**host, "Cookie": f"steptable-serve-8000={TOKEN}"}  # (a cookie, which every port of a host gets: none)
    assert gate.allowed(make_mocked_request("GET", "/static/app.js", headers=cookie))[0] == 401  # type: ignore[index]
    assert gate.allowed(make_mocked_request("GET", "/?token=wrong", headers=host))[0] == 401  # type: ignore[index]
    assert gate.allowed(make_mocked_request("GET", "/", headers=host))[0] == 401  # type: ignore[index]
    rebound = {"Host": "evil.example:8000"}
    assert gate.allowed(make_mocked_request("GET", f"/?token={TOKEN}", headers=rebound))[0] == 403  # type: ignore[index]
    ws = {**host, "Upgrade": "websocket"}
    assert gate.allowed(make_mocked_request("GET", f"/ws?token={TOKEN}", headers=ws)) is None  # no Origin: a script
    assert gate.allowed(make_mocked_request("GET", f"/ws/{TOKEN}?width=80", headers=ws)) is None  # the page's
    same = {**ws, "Origin": "http://localhost:8000"}
    assert gate.allowed(make_mocked_request("GET", f"/ws?token={TOKEN}", headers=same)) is None
    other = {**ws, "Origin": "http://evil.example"}
    assert gate.allowed(make_mocked_request("GET", f"/ws?token={TOKEN}", headers=other))[0] == 403  # type: ignore[index]
    assert gate.open_session() and not gate.open_session() and gate.sessions == 1
    gate.close_session()
    assert gate.open_session()
