"""hive/web/security.py through Starlette's TestClient: the Host header must name the bound address
(no DNS rebinding), a token guards every request when set, every state-changing request needs
the page's CSRF token, --read-only refuses them all, and only loopback may go without a token."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from hive.errors import HiveError
from hive.web.app import bind
from hive.web.security import Guard, GuardMiddleware, check_bind, split_host

PORT = 8765
CSRF = "csrf-123"


async def _echo(request: Request) -> PlainTextResponse:
    """What the route got: a form's fields reach it whole after the guard read the CSRF field."""
    form = dict(parse_qsl((await request.body()).decode())) if request.method == "POST" else {}
    return PlainTextResponse(f"{request.method} ok {form}")


def guarded(host: str = "127.0.0.1", token: str = "", read_only: bool = False, names: frozenset[str] = frozenset()):
    app = Starlette(routes=[Route("/", _echo, methods=["GET", "POST"])])
    guard = Guard(host, PORT, token, CSRF, read_only, names)
    return TestClient(GuardMiddleware(app, guard), base_url=f"http://127.0.0.1:{PORT}", follow_redirects=False)


@pytest.mark.parametrize(
    "host, status",
    [
        (f"127.0.0.1:{PORT}", 200),
        (f"localhost:{PORT}", 200),
        (f"[::1]:{PORT}", 200),
        (f"evil.example:{PORT}", 400),  # a DNS name rebound to 127.0.0.1
        (f"127.0.0.1.nip.io:{PORT}", 400),
        ("127.0.0.1:9999", 400),  # another port
        ("127.0.0.1", 400),  # no port: port 80, not this one
        ("", 400),
    ],
)
def test_a_loopback_dashboard_answers_only_to_its_own_names(host, status):
    r = guarded().get("/", headers={"host": host})
    assert r.status_code == status, r.text
    if status == 400:
        assert "not the address the dashboard is bound to" in r.text


def test_a_dashboard_on_every_interface_answers_to_addresses_and_the_machines_names_only():
    c = guarded("0.0.0.0", token="t", names=frozenset({"buildbox"}))
    auth = {"authorization": "Bearer t"}
    assert c.get("/", headers={"host": f"10.1.2.3:{PORT}", **auth}).status_code == 200
    assert c.get("/", headers={"host": f"buildbox:{PORT}", **auth}).status_code == 200
    assert c.get("/", headers={"host": f"attacker.example:{PORT}", **auth}).status_code == 400


def test_with_a_token_every_request_needs_it_and_the_printed_url_sets_a_cookie():
    c = guarded(token="s3cret")
    assert c.get("/").status_code == 401
    assert c.get("/?token=wrong").status_code == 401
    r = c.get("/?token=s3cret&x=1")
    assert r.status_code == 303 and r.headers["location"] == "/?x=1", "the token leaves the address bar"
    cookie = r.headers["set-cookie"]
    assert f"hive_token_{PORT}=s3cret" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert c.get("/").status_code == 200, "the browser sends the cookie from now on"
    fresh = guarded(token="s3cret")
    assert fresh.get("/", headers={"authorization": "Bearer s3cret"}).status_code == 200
    fresh.cookies.set("hive_token_9999", "s3cret")
    assert fresh.get("/").status_code == 401, "another port's dashboard's cookie"
    refused = fresh.post("/?token=s3cret", data={"csrf_token": CSRF})
    assert refused.status_code == 401, "a token in the URL never authorises a state change"


def test_a_state_changing_request_needs_the_csrf_token_in_its_header_or_its_form():
    c = guarded()
    assert c.post("/", data={"key": "p:1"}).status_code == 403
    wrong = c.post("/", data={"key": "p:1", "csrf_token": "guess"})
    assert wrong.status_code == 403 and "CSRF" in wrong.text
    assert c.post("/", headers={"x-csrf-token": CSRF}, data={"key": "p:1"}).status_code == 200
    r = c.post("/", data={"key": "p:1", "text": "a b&c", "csrf_token": CSRF})
    assert r.status_code == 200 and "'key': 'p:1'" in r.text and "'text': 'a b&c'" in r.text, r.text
    as_json = {"content-type": "application/json"}
    assert c.post("/", content=b'{"csrf_token": "csrf-123"}', headers=as_json).status_code == 403


def test_a_request_from_another_site_is_refused_even_with_the_token():
    r = guarded().post("/", headers={"x-csrf-token": CSRF, "origin": "http://evil.example"})
    assert r.status_code == 403
    same = guarded().post("/", headers={"x-csrf-token": CSRF, "origin": f"http://127.0.0.1:{PORT}"})
    assert same.status_code == 200


def test_read_only_refuses_every_action_and_shows_every_page():
    c = guarded(read_only=True)
    assert c.get("/").status_code == 200
    r = c.post("/", headers={"x-csrf-token": CSRF})
    assert r.status_code == 403 and "read-only" in r.text


def test_every_response_keeps_scripts_to_the_pages_own_and_the_page_out_of_frames():
    r = guarded().get("/")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY" and r.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_needs_no_token(host):
    check_bind(host, "")


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "myhost.example"])
def test_any_other_address_refuses_to_start_without_a_token(host):
    with pytest.raises(HiveError, match="needs a token; give --token T or set \\[web\\] token"):
        check_bind(host, "")
    check_bind(host, "a-token")


def test_host_headers_are_split_into_name_and_port():
    assert split_host("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert split_host("[::1]:80") == ("::1", 80)
    assert split_host("LocalHost") == ("localhost", None)
    assert split_host("a:b") == ("", None)


def test_a_port_out_of_range_is_a_user_error():
    with pytest.raises(HiveError, match="a port is a number from 0 to 65535"):
        bind("127.0.0.1", 70000)


def test_the_csrf_token_is_kept_private_and_the_same_after_a_restart(tmp_path):
    """Issue 38: after `hive web` restarts, the forms of a page left open still carry a good token."""
    from hive.web.security import csrf_secret

    path = tmp_path / ".hive" / "web" / "csrf"
    first = csrf_secret(path)
    assert csrf_secret(path) == first and len(first) >= 32
    assert path.stat().st_mode & 0o777 == 0o600
    path.chmod(0o644)  # readable by others: not kept
    assert csrf_secret(path) != first and path.stat().st_mode & 0o777 == 0o600
