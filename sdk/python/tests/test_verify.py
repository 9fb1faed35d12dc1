from __future__ import annotations

import json
from typing import Any

import pytest

from helpers import Clock, Fetcher, load_vectors, token
from mcpmesh_assertion import MIN_REFRESH_INTERVAL, Reason, VerificationError, Verifier

VECTORS = load_vectors()
JWKS = json.dumps(VECTORS["jwks"]).encode()


def verifier(fetch: Fetcher, clock: Clock, **kw: Any) -> Verifier:
    return Verifier(
        "https://mcp.example.com/.well-known/gateway/jwks.json",
        VECTORS["audience"],
        VECTORS["issuer"],
        leeway=VECTORS["leeway_seconds"],
        clock=clock,
        fetch=fetch,
        **kw,
    )


@pytest.mark.parametrize("case", VECTORS["cases"], ids=[c["name"] for c in VECTORS["cases"]])
def test_shared_vectors(case: dict[str, Any]) -> None:
    v = verifier(Fetcher(JWKS, "max-age=3600"), Clock(VECTORS["now"]))
    if not case["valid"]:
        with pytest.raises(VerificationError) as e:
            v.verify(case["token"])
        assert e.value.reason.value == case["reason"], str(e.value)
        return
    ident = v.verify(case["token"])
    want = case["claims"]
    assert (ident.subject, ident.email, ident.name, list(ident.groups)) == (
        want["sub"],
        want["email"],
        want["name"],
        want["groups"],
    )
    assert ident.issuer == VECTORS["issuer"] and ident.audience == VECTORS["audience"]
    for k, val in want.items():
        assert ident.claims[k] == val, k


def test_unknown_kid_refreshes_at_most_once_per_interval() -> None:
    fetch, clock = Fetcher(JWKS, "max-age=3600"), Clock(VECTORS["now"])
    v = verifier(fetch, clock)
    v.verify(token(VECTORS, "valid"))
    steps = [(0.0, 1), (MIN_REFRESH_INTERVAL, 2), (MIN_REFRESH_INTERVAL / 2, 2), (MIN_REFRESH_INTERVAL / 2, 3)]
    for i, (advance, want) in enumerate(steps):
        clock.now += advance
        with pytest.raises(VerificationError) as e:
            v.verify(token(VECTORS, "unknown_kid"))
        assert e.value.reason is Reason.UNKNOWN_KEY
        assert fetch.calls == want, f"step {i}"


def test_rotated_key_is_found_by_refresh() -> None:
    stale = dict(VECTORS["jwks"]["keys"][0], kid="old-key")
    fetch, clock = Fetcher(json.dumps({"keys": [stale]}).encode(), "max-age=3600"), Clock(VECTORS["now"])
    v = verifier(fetch, clock)
    with pytest.raises(VerificationError) as e:
        v.verify(token(VECTORS, "valid"))
    assert e.value.reason is Reason.UNKNOWN_KEY
    fetch.doc = JWKS
    clock.now += MIN_REFRESH_INTERVAL
    assert v.verify(token(VECTORS, "valid")).email == "alice@example.com"


@pytest.mark.parametrize(
    "cache_control,after,want",
    [
        ("public, max-age=3600", 59 * 60, 1),
        ("public, max-age=3600", 61 * 60, 2),
        ("max-age=60", 120, 2),
        ("no-store", 1, 2),
        ("", 299, 1),
        ("", 300, 2),
    ],
)
def test_cache_follows_max_age(cache_control: str, after: float, want: int) -> None:
    fetch, clock = Fetcher(JWKS, cache_control), Clock(VECTORS["now"])
    v = verifier(fetch, clock, any_issuer=False)
    v._leeway = 7200  # the valid vector stays valid across the wait
    for _ in range(2):
        v.verify(token(VECTORS, "valid"))
        clock.now += after
    assert fetch.calls == want


@pytest.mark.parametrize(
    "status,doc",
    [(500, b"oops"), (200, b"<html>"), (200, b'{"keys":[{"kty":"RSA","kid":"r","n":"AQAB","e":"AQAB"}]}')],
)
def test_jwks_unavailable_fails_closed(status: int, doc: bytes) -> None:
    v = verifier(Fetcher(doc, status=status), Clock(VECTORS["now"]))
    with pytest.raises(VerificationError) as e:
        v.verify(token(VECTORS, "valid"))
    assert e.value.reason is Reason.JWKS_UNAVAILABLE
    assert "cannot fetch the JWKS" in str(e.value)


def test_unreachable_jwks_fails_closed() -> None:
    v = Verifier("http://127.0.0.1:9/jwks.json", "a", "i", clock=Clock(VECTORS["now"]), timeout=2)
    with pytest.raises(VerificationError) as e:
        v.verify(token(VECTORS, "valid"))
    assert e.value.reason is Reason.JWKS_UNAVAILABLE


@pytest.mark.parametrize(
    "values,reason",
    [([], Reason.MISSING), ([token(VECTORS, "valid")] * 2, Reason.MISSING), ([token(VECTORS, "expired")], Reason.EXPIRED)],
)
def test_header_values(values: list[str], reason: Reason) -> None:
    v = verifier(Fetcher(JWKS), Clock(VECTORS["now"]))
    with pytest.raises(VerificationError) as e:
        v.verify_header_values(values)
    assert e.value.reason is reason
    assert v.verify_header_values([token(VECTORS, "valid")]).email == "alice@example.com"


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"jwks_url": "", "audience": "a", "issuer": "i"}, "jwks_url"),
        ({"jwks_url": "u", "audience": "", "issuer": "i"}, "audience"),
        ({"jwks_url": "u", "audience": "a"}, "issuer"),
    ],
)
def test_verifier_requires_config(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Verifier(**kwargs)
