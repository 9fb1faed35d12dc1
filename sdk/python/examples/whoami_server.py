"""A minimal MCP server (Streamable HTTP, JSON responses) behind the gateway: one tool,
``whoami``, answers with the caller's email from the verified X-Gateway-Assertion.

    PYTHONPATH=sdk/python python3 sdk/python/examples/whoami_server.py \\
        --jwks https://mcp.example.com/.well-known/gateway/jwks.json \\
        --issuer https://auth.example.com --audience mcp.example.com [--port 8000]

It prints ``READY http://127.0.0.1:PORT`` once it listens (port 0 picks a free one). The
end-to-end tests (wasmtest/e2e/gatewaytest) run it behind the local gateway.
"""

from __future__ import annotations

import argparse
import socket
import sys
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcpmesh_assertion import AssertionMiddleware, Verifier, identity_from_scope

PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
WHOAMI = {
    "name": "whoami",
    "description": "The caller's email, from the gateway's identity assertion",
    "inputSchema": {"type": "object", "properties": {}},
}


def rpc_result(id_: Any, result: dict[str, Any]) -> JSONResponse:
    return JSONResponse({"jsonrpc": "2.0", "id": id_, "result": result})


def rpc_error(id_: Any, code: int, message: str) -> JSONResponse:
    return JSONResponse({"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}})


async def mcp(request: Request) -> Response:
    if request.method != "POST":
        return Response(status_code=405, headers={"Allow": "POST"})
    try:
        msg = await request.json()
    except ValueError:
        return rpc_error(None, -32700, "parse error")
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
        return rpc_error(None, -32600, "invalid request")
    if "id" not in msg:  # a notification (notifications/initialized, …)
        return Response(status_code=202)
    id_, method, params = msg["id"], msg["method"], msg.get("params") or {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        return rpc_result(
            id_,
            {
                "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "whoami-python", "version": "1"},
            },
        )
    if method == "ping":
        return rpc_result(id_, {})
    if method == "tools/list":
        return rpc_result(id_, {"tools": [WHOAMI]})
    if method == "tools/call":
        if params.get("name") != "whoami":
            return rpc_error(id_, -32602, f"unknown tool {params.get('name')!r}")
        ident = identity_from_scope(request.scope)
        assert ident is not None  # AssertionMiddleware let the request through
        return rpc_result(id_, {"content": [{"type": "text", "text": ident.email}], "isError": False})
    return rpc_error(id_, -32601, f"method {method!r} not found")


def app(verifier: Verifier) -> AssertionMiddleware:
    starlette = Starlette(routes=[Route("/{path:path}", mcp, methods=["GET", "POST", "DELETE"])])
    return AssertionMiddleware(starlette, verifier)


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jwks", required=True)
    p.add_argument("--issuer", required=True)
    p.add_argument("--audience", required=True)
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args(argv)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    verifier = Verifier(args.jwks, args.audience, args.issuer)
    server = uvicorn.Server(uvicorn.Config(app(verifier), log_level="warning"))
    print(f"READY http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv[1:])
