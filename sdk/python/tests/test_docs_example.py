"""The example of docs/sdk-python.md runs and answers as the page says."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from starlette.testclient import TestClient

from helpers import Clock, Fetcher, load_vectors, token
from mcpmesh_assertion import AssertionMiddleware, Verifier

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "sdk-python.md")


def test_docs_example() -> None:
    with open(DOC, encoding="utf-8") as f:
        code = re.search(r"```python\n(.*?)```", f.read(), re.S)
    assert code is not None
    ns: dict[str, Any] = {}
    exec(compile(code.group(1), DOC, "exec"), ns)
    app = ns["app"]
    assert isinstance(app, AssertionMiddleware)
    v = load_vectors()
    # The same application, with the vectors' key set and clock instead of the network.
    app.verifier = Verifier(
        "https://mcp.example.com/.well-known/gateway/jwks.json",
        v["audience"],
        v["issuer"],
        clock=Clock(v["now"]),
        fetch=Fetcher(json.dumps(v["jwks"]).encode()),
    )
    with TestClient(app) as client:
        assert client.get("/", headers={"X-Gateway-Assertion": token(v, "valid")}).text == "hello alice@example.com"
        assert client.get("/").status_code == 401
