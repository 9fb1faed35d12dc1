"""Verification of the identity assertion and the JWKS cache."""

from __future__ import annotations

import base64
import binascii
import enum
import json
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePublicKey
from jwt.algorithms import ECAlgorithm

HEADER_NAME = "X-Gateway-Assertion"
MAX_ASSERTION_SIZE = 8 * 1024
DEFAULT_LEEWAY = 30.0
MIN_REFRESH_INTERVAL = 30.0
DEFAULT_CACHE_TTL = 300.0
MAX_CACHE_TTL = 24 * 3600.0
MAX_JWKS_SIZE = 1 << 20

_B64URL = re.compile(r"^[A-Za-z0-9_-]*$")


class Reason(str, enum.Enum):
    """Why an assertion was refused (the names of sdk/testdata/vectors.json)."""

    MISSING = "missing"
    OVERSIZED = "oversized"
    MALFORMED = "malformed"
    HEADER = "header"
    ALGORITHM = "alg"
    UNKNOWN_KEY = "unknown_kid"
    SIGNATURE = "signature"
    ISSUER = "issuer"
    AUDIENCE = "audience"
    EXPIRED = "expired"
    NOT_YET_VALID = "not_yet_valid"
    CLAIMS = "claims"
    JWKS_UNAVAILABLE = "jwks"


class VerificationError(Exception):
    """A refused assertion."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(f"assertion: {reason.value}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Identity:
    """The verified content of an assertion; ``claims`` holds every claim."""

    subject: str
    email: str
    name: str
    groups: tuple[str, ...]
    issuer: str
    audience: str
    issued_at: float
    expires_at: float
    claims: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True)
class FetchResult:
    """An HTTP response to the JWKS request."""

    status: int
    headers: Mapping[str, str]
    body: bytes


Fetcher = Callable[[str], FetchResult]


def _urllib_fetch(timeout: float) -> Fetcher:
    def fetch(url: str) -> FetchResult:
        req = urllib.request.Request(url, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (URL is configuration)
                body = resp.read(MAX_JWKS_SIZE + 1)
                return FetchResult(resp.status, {k.lower(): v for k, v in resp.headers.items()}, body)
        except urllib.error.HTTPError as e:
            return FetchResult(e.code, {}, b"")

    return fetch


def _cache_ttl(headers: Mapping[str, str]) -> float:
    value = next((v for k, v in headers.items() if k.lower() == "cache-control"), "")
    ttl = DEFAULT_CACHE_TTL
    for directive in value.split(","):
        name, _, arg = directive.strip().partition("=")
        name = name.lower()
        if name in ("no-store", "no-cache"):
            return 0.0
        if name == "max-age":
            try:
                n = int(arg.strip('"'))
            except ValueError:
                return 0.0
            if n < 0:
                return 0.0
            ttl = min(float(n), MAX_CACHE_TTL)
    return ttl


def parse_jwks(doc: bytes) -> dict[str, EllipticCurvePublicKey]:
    """Returns the P-256 signature keys of a JWKS document by kid."""
    try:
        data = json.loads(doc)
        entries = data["keys"]
        if not isinstance(entries, list):
            raise TypeError("keys is not a list")
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"not a JWKS: {e}") from e
    keys: dict[str, EllipticCurvePublicKey] = {}
    for k in entries:
        if not isinstance(k, dict):
            continue
        if k.get("kty") != "EC" or k.get("crv") != "P-256" or not k.get("kid"):
            continue
        if k.get("use", "sig") != "sig" or k.get("alg", "ES256") != "ES256":
            continue
        try:
            key = ECAlgorithm.from_jwk(json.dumps(k))
        except Exception as e:  # PyJWT raises InvalidKeyError and others
            raise ValueError(f"key {k.get('kid')!r}: {e}") from e
        if not isinstance(key, EllipticCurvePublicKey):
            continue
        keys[str(k["kid"])] = key
    if not keys:
        raise ValueError("no ES256 P-256 key")
    return keys


class _KeyCache:
    def __init__(self, url: str, fetch: Fetcher, clock: Callable[[], float]) -> None:
        self._url = url
        self._fetch = fetch
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: dict[str, EllipticCurvePublicKey] = {}
        self._fetched_at: float | None = None
        self._expires = 0.0

    def key(self, kid: str) -> EllipticCurvePublicKey:
        with self._lock:
            now = self._clock()
            if self._fetched_at is None or now >= self._expires:
                self._refresh()
            elif kid not in self._keys and now - self._fetched_at >= MIN_REFRESH_INTERVAL:
                self._refresh()
            key = self._keys.get(kid)
            if key is None:
                raise VerificationError(Reason.UNKNOWN_KEY, f"kid {kid!r} is not in the JWKS at {self._url}")
            return key

    def _refresh(self) -> None:
        try:
            res = self._fetch(self._url)
            if res.status != 200:
                raise ValueError(f"HTTP status {res.status}")
            if len(res.body) > MAX_JWKS_SIZE:
                raise ValueError(f"more than {MAX_JWKS_SIZE} bytes")
            keys = parse_jwks(res.body)
        except (OSError, ValueError) as e:
            self._keys, self._fetched_at, self._expires = {}, None, 0.0
            raise VerificationError(Reason.JWKS_UNAVAILABLE, f"cannot fetch the JWKS at {self._url}: {e}") from e
        now = self._clock()
        self._keys, self._fetched_at, self._expires = keys, now, now + _cache_ttl(res.headers)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(k)
        out[k] = v
    return out


class _Duplicate(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _b64decode(seg: str) -> bytes:
    if not _B64URL.match(seg):
        raise VerificationError(Reason.MALFORMED, "segment is not base64url")
    try:
        raw = base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4))
    except (binascii.Error, ValueError) as e:
        raise VerificationError(Reason.MALFORMED, f"segment is not base64url: {e}") from e
    # Canonical encoding only (unused bits zero), as the Go package: one token, one spelling.
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != seg:
        raise VerificationError(Reason.MALFORMED, "segment is not canonical base64url")
    return raw


def _decode_object(seg: str, duplicate_reason: Reason) -> dict[str, Any]:
    raw = _b64decode(seg)
    try:
        obj = json.loads(raw, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except _Duplicate as e:
        raise VerificationError(duplicate_reason, f"member {e.name!r} appears twice") from e
    except ValueError as e:
        raise VerificationError(Reason.MALFORMED, f"segment is not JSON: {e}") from e
    if not isinstance(obj, dict):
        raise VerificationError(Reason.MALFORMED, "segment is not a JSON object")
    return obj


def _numeric_date(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        return None
    return float(v)


_ES256 = ECAlgorithm(ECAlgorithm.SHA256)


class Verifier:
    """Verifies assertions; thread safe. The JWKS is fetched on first use.

    ``fetch`` (the HTTP client) and ``clock`` (seconds since the epoch) can be injected.
    Without ``issuer``, ``any_issuer=True`` must be given and any non-empty ``iss`` passes.
    """

    def __init__(
        self,
        jwks_url: str,
        audience: str,
        issuer: str | None = None,
        *,
        any_issuer: bool = False,
        leeway: float = DEFAULT_LEEWAY,
        clock: Callable[[], float] = time.time,
        fetch: Fetcher | None = None,
        timeout: float = 10.0,
    ) -> None:
        if not jwks_url:
            raise ValueError("jwks_url is required")
        if not audience:
            raise ValueError("audience is required")
        if not issuer and not any_issuer:
            raise ValueError("issuer is required")
        self._audience = audience
        self._issuer = issuer or ""
        self._leeway = max(leeway, 0.0)
        self._clock = clock
        self._keys = _KeyCache(jwks_url, fetch or _urllib_fetch(timeout), clock)

    def verify(self, token: str) -> Identity:
        """Checks token and returns the identity it asserts; raises VerificationError."""
        if not token:
            raise VerificationError(Reason.MISSING, "no assertion")
        if len(token.encode("utf-8", "surrogatepass")) > MAX_ASSERTION_SIZE:
            raise VerificationError(Reason.OVERSIZED, f"{len(token)} bytes, more than {MAX_ASSERTION_SIZE}")
        parts = token.split(".")
        if len(parts) != 3:
            raise VerificationError(Reason.MALFORMED, f"not a compact JWS ({len(parts)} segments)")
        header = _decode_object(parts[0], Reason.HEADER)
        alg = header.get("alg")
        if alg != "ES256":
            raise VerificationError(Reason.ALGORITHM, f"alg {alg!r}, only ES256 is accepted")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise VerificationError(Reason.HEADER, "no kid")
        if "crit" in header:
            raise VerificationError(Reason.HEADER, "crit is not supported")
        typ = header.get("typ")
        if typ is not None and (not isinstance(typ, str) or typ.upper() != "JWT"):
            raise VerificationError(Reason.HEADER, f"typ {typ!r}")
        sig = _b64decode(parts[2])
        key = self._keys.key(kid)
        if len(sig) != 64 or not _ES256.verify(f"{parts[0]}.{parts[1]}".encode("ascii"), key, sig):
            raise VerificationError(Reason.SIGNATURE, f"the signature does not verify with key {kid!r}")
        claims = _decode_object(parts[1], Reason.MALFORMED)
        return self._check_claims(claims)

    def verify_header_values(self, values: Sequence[str]) -> Identity:
        """Verifies the values of the X-Gateway-Assertion header: exactly one is required (a
        value with a comma is several headers joined by a proxy)."""
        values = [part.strip() for v in values for part in v.split(",")]
        if not values:
            raise VerificationError(Reason.MISSING, f"no {HEADER_NAME} header")
        if len(values) > 1:
            raise VerificationError(Reason.MISSING, f"{len(values)} {HEADER_NAME} headers, want one")
        return self.verify(values[0])

    def _check_claims(self, c: dict[str, Any]) -> Identity:
        now, leeway = self._clock(), self._leeway
        iss = c.get("iss")
        if not isinstance(iss, str) or not iss or (self._issuer and iss != self._issuer):
            raise VerificationError(Reason.ISSUER, f"iss {iss!r}, want {self._issuer!r}")
        aud = c.get("aud")
        if not (aud == self._audience or (isinstance(aud, list) and self._audience in aud)):
            raise VerificationError(Reason.AUDIENCE, f"aud {aud!r}, want {self._audience!r}")
        exp = _numeric_date(c.get("exp"))
        if exp is None:
            raise VerificationError(Reason.EXPIRED, "no exp")
        if now >= exp + leeway:
            raise VerificationError(Reason.EXPIRED, f"expired at {int(exp)}")
        iat = _numeric_date(c.get("iat"))
        if iat is None:
            raise VerificationError(Reason.NOT_YET_VALID, "no iat")
        if iat > now + leeway:
            raise VerificationError(Reason.NOT_YET_VALID, f"issued in the future ({int(iat)})")
        if "nbf" in c:
            nbf = _numeric_date(c["nbf"])
            if nbf is None:
                raise VerificationError(Reason.NOT_YET_VALID, "nbf is not a number")
            if nbf > now + leeway:
                raise VerificationError(Reason.NOT_YET_VALID, f"not valid before {int(nbf)}")
        sub = c.get("sub")
        if not isinstance(sub, str) or not sub:
            raise VerificationError(Reason.CLAIMS, "sub is missing or not a string")
        strings: dict[str, str] = {}
        for name in ("email", "name"):
            v = c.get(name, "")
            if not isinstance(v, str):
                raise VerificationError(Reason.CLAIMS, f"{name} is not a string")
            strings[name] = v
        groups = c.get("groups") or []
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise VerificationError(Reason.CLAIMS, "groups is not a list of strings")
        return Identity(
            subject=sub,
            email=strings["email"],
            name=strings["name"],
            groups=tuple(groups),
            issuer=iss,
            audience=self._audience,
            issued_at=iat,
            expires_at=exp,
            claims=c,
        )


def verify(
    token: str,
    *,
    jwks_url: str,
    audience: str,
    issuer: str | None = None,
    leeway: float = DEFAULT_LEEWAY,
) -> Identity:
    """Verifies one assertion with a fresh Verifier (it fetches the JWKS every time: keep a
    Verifier to cache it)."""
    return Verifier(jwks_url, audience, issuer, any_issuer=issuer is None, leeway=leeway).verify(token)
