"""Verify the MCP gateway's identity assertion, the ``X-Gateway-Assertion`` JWT.

The contract (docs/sdk-python.md; the same as the Go package sdk/go/assertion):

* The assertion is a compact JWS of at most ``MAX_ASSERTION_SIZE`` bytes whose protected
  header has ``alg`` ES256 (nothing else: not ``none``, not HS256), a ``kid``, no ``crit``
  and no duplicated member.
* The ``kid`` names a key of the gateway's JWKS (``/.well-known/gateway/jwks.json`` on any
  route host), fetched on first use and kept for the ``Cache-Control`` max-age of its
  response (default 5 minutes, at most 24 hours). An unknown ``kid`` refetches it at most
  once per 30 seconds; a ``kid`` still unknown is refused. A JWKS that cannot be fetched fails
  closed.
* ``iss`` equals the configured issuer (the gateway's authenticate_service_url), ``aud`` is
  the receiving host, ``exp`` is in the future and ``iat`` (and ``nbf`` when present) not,
  each within the leeway (default 30 seconds); ``sub`` is a non-empty string, ``email`` and
  ``name`` strings, ``groups`` a list of strings.

Every refusal raises ``VerificationError`` whose ``reason`` (a ``Reason``) says which rule
failed. ``AssertionMiddleware`` (ASGI) answers 401 to a request without exactly one valid
header and otherwise puts the ``Identity`` in ``scope["state"]["gateway_identity"]``.
"""

import sys

try:
    import cryptography  # noqa: F401
    import jwt  # noqa: F401
except ImportError as _e:  # pragma: no cover (depends on the interpreter)
    if sys.argv[:1] == ["-m"]:  # python3 -m mcpmesh_assertion: one line, exit 1
        print(
            f"mcpmesh_assertion: {sys.executable} cannot import {_e.name} (needs PyJWT with cryptography; "
            "Debian: python3-jwt python3-cryptography, see sdk/python/install-deps.sh)",
            file=sys.stderr,
        )
        sys.exit(1)
    raise

from ._verify import (  # noqa: E402
    DEFAULT_LEEWAY,
    HEADER_NAME,
    MAX_ASSERTION_SIZE,
    MIN_REFRESH_INTERVAL,
    FetchResult,
    Identity,
    Reason,
    VerificationError,
    Verifier,
    verify,
)
from .asgi import STATE_KEY, AssertionMiddleware, identity_from_scope  # noqa: E402

__all__ = [
    "DEFAULT_LEEWAY",
    "HEADER_NAME",
    "MAX_ASSERTION_SIZE",
    "MIN_REFRESH_INTERVAL",
    "STATE_KEY",
    "AssertionMiddleware",
    "FetchResult",
    "Identity",
    "Reason",
    "VerificationError",
    "Verifier",
    "identity_from_scope",
    "verify",
]
