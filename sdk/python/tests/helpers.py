"""Shared test helpers: the vectors the token service's signer wrote, a counting fetcher, a clock."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from mcpmesh_assertion import FetchResult

VECTORS_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "testdata", "vectors.json")


def load_vectors() -> dict[str, Any]:
    with open(VECTORS_PATH, encoding="utf-8") as f:
        v: dict[str, Any] = json.load(f)
    assert v["cases"], "no cases"
    return v


def token(v: dict[str, Any], name: str) -> str:
    for c in v["cases"]:
        if c["name"] == name:
            return str(c["token"])
    raise KeyError(name)


@dataclass
class Clock:
    now: float

    def __call__(self) -> float:
        return self.now


@dataclass
class Fetcher:
    doc: bytes
    cache_control: str = ""
    status: int = 200
    calls: int = 0
    urls: list[str] = field(default_factory=list)

    def __call__(self, url: str) -> FetchResult:
        self.calls += 1
        self.urls.append(url)
        headers = {"cache-control": self.cache_control} if self.cache_control else {}
        return FetchResult(self.status, headers, self.doc)
