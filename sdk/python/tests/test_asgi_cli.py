from __future__ import annotations

import http.server
import io
import json
import os
import subprocess
import sys
import threading
from typing import Any, Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from helpers import Clock, Fetcher, load_vectors, token
from mcpmesh_assertion import AssertionMiddleware, Verifier, identity_from_scope
from mcpmesh_assertion.__main__ import run

VECTORS = load_vectors()
JWKS = json.dumps(VECTORS["jwks"]).encode()
SDK_PYTHON = os.path.join(os.path.dirname(__file__), "..")


def app() -> Any:
    async def hello(request: Request) -> PlainTextResponse:
        ident = identity_from_scope(request.scope)
        assert ident is not None and request.state.gateway_identity is ident
        return PlainTextResponse(f"hello {ident.email} {','.join(ident.groups)}")

    v = Verifier("https://x/jwks", VECTORS["audience"], VECTORS["issuer"], clock=Clock(VECTORS["now"]), fetch=Fetcher(JWKS))
    return AssertionMiddleware(Starlette(routes=[Route("/", hello)]), v)


@pytest.mark.parametrize(
    "headers,status,body",
    [
        ([("X-Gateway-Assertion", token(VECTORS, "valid"))], 200, "hello alice@example.com admins,staff"),
        ([], 401, "no X-Gateway-Assertion header"),
        ([("X-Gateway-Assertion", token(VECTORS, "valid"))] * 2, 401, "2 X-Gateway-Assertion headers"),
        ([("X-Gateway-Assertion", token(VECTORS, "wrong_issuer"))], 401, "assertion: issuer"),
        ([("X-Gateway-Assertion", token(VECTORS, "hs256_signed_with_public_key"))], 401, "only ES256 is accepted"),
    ],
)
def test_middleware(headers: list[tuple[str, str]], status: int, body: str) -> None:
    with TestClient(app()) as client:
        r = client.get("/", headers=headers)
    assert r.status_code == status and body in r.text, r.text


@pytest.fixture()
def jwks_url() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "public, max-age=3600")
            self.end_headers()
            self.wfile.write(JWKS)

        def log_message(self, *args: Any) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/.well-known/gateway/jwks.json"
    srv.shutdown()


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[c["name"] for c in VECTORS["cases"]])
def test_command_shared_vectors(case: dict[str, Any], jwks_url: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    args = ["verify", "--jwks", jwks_url, "--audience", VECTORS["audience"], "--issuer", VECTORS["issuer"]]
    code = run(args, io.StringIO(case["token"] + "\n"), out, err, clock=Clock(VECTORS["now"]))
    if case["valid"]:
        assert code == 0 and err.getvalue() == ""
        lines = out.getvalue().splitlines()
        assert len(lines) == 1
        claims = json.loads(lines[0])
        assert claims["email"] == case["claims"]["email"] and claims["aud"] == VECTORS["audience"]
    else:
        assert code == 1 and out.getvalue() == ""
        lines = err.getvalue().splitlines()
        assert len(lines) == 1 and f"assertion: {case['reason']}:" in lines[0], err.getvalue()


@pytest.mark.parametrize(
    "args,want",
    [
        ([], "the command is verify"),
        (["verify", "--audience", "a"], "--jwks"),
        (["verify", "--jwks", "http://127.0.0.1:9/", "--audience", "a"], "assertion: jwks: cannot fetch the JWKS"),
    ],
)
def test_command_process(args: list[str], want: str) -> None:
    """The real process: exit 1 and one line on stderr (the valid vector, at today's clock)."""
    p = subprocess.run(
        [sys.executable, "-m", "mcpmesh_assertion", *args],
        input=token(VECTORS, "valid"),
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SDK_PYTHON},
        timeout=30,
    )
    assert p.returncode == 1 and p.stdout == "" and len(p.stderr.splitlines()) == 1 and want in p.stderr, p.stderr


def test_command_process_expired_at_todays_clock(jwks_url: str) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "mcpmesh_assertion", "verify", "--jwks", jwks_url, "--audience", VECTORS["audience"]],
        input=token(VECTORS, "valid"),
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SDK_PYTHON},
        timeout=30,
    )
    assert p.returncode == 1 and p.stderr.startswith("assertion: expired:") and len(p.stderr.splitlines()) == 1
