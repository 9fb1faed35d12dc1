"""ASGI middleware: only requests with a valid X-Gateway-Assertion reach the application."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, MutableMapping

from ._verify import HEADER_NAME, Identity, VerificationError, Verifier

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

STATE_KEY = "gateway_identity"
_HEADER = HEADER_NAME.lower().encode("latin-1")


def identity_from_scope(scope: Scope) -> Identity | None:
    """Returns the identity AssertionMiddleware verified (Starlette: request.state.gateway_identity)."""
    state = scope.get("state") or {}
    ident = state.get(STATE_KEY)
    return ident if isinstance(ident, Identity) else None


class AssertionMiddleware:
    """Passes on http and websocket connections with exactly one valid X-Gateway-Assertion
    header, with the Identity in ``scope["state"]["gateway_identity"]``; answers others with
    401 and a plain-text body saying why (a websocket is closed with code 1008). Lifespan
    events pass through. The JWKS fetch runs in a worker thread."""

    def __init__(self, app: ASGIApp, verifier: Verifier) -> None:
        self.app = app
        self.verifier = verifier

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        values = [v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == _HEADER]
        try:
            identity = await asyncio.to_thread(self.verifier.verify_header_values, values)
        except VerificationError as e:
            await _refuse(scope, send, str(e))
            return
        scope.setdefault("state", {})[STATE_KEY] = identity
        await self.app(scope, receive, send)


async def _refuse(scope: Scope, send: Send, why: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": why[:120]})
        return
    body = (why + "\n").encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode("ascii")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
