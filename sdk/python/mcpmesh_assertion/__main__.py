"""python3 -m mcpmesh_assertion verify --jwks URL --audience HOST [--issuer URL] < assertion

On success the verified claims are written to standard output as one JSON object (exit 0);
otherwise one line saying why goes to standard error (exit 1). Without --issuer any non-empty
iss is accepted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Callable, NoReturn, Sequence, TextIO

from ._verify import VerificationError, Verifier


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def run(
    argv: Sequence[str],
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    clock: Callable[[], float] = time.time,
) -> int:
    def fail(msg: str) -> int:
        print(" ".join(msg.split("\n")), file=stderr)
        return 1

    parser = _Parser(prog="python3 -m mcpmesh_assertion", add_help=False)
    sub = parser.add_subparsers(dest="command")
    v = sub.add_parser("verify", add_help=False)
    v.add_argument("--jwks", required=True)
    v.add_argument("--audience", required=True)
    v.add_argument("--issuer")
    try:
        args = parser.parse_args(list(argv))
        if args.command != "verify":
            raise _UsageError("the command is verify")
    except _UsageError as e:
        return fail(f"mcpmesh_assertion: {e} (usage: verify --jwks URL --audience HOST [--issuer URL] < assertion)")
    try:
        verifier = Verifier(args.jwks, args.audience, args.issuer, any_issuer=not args.issuer, clock=clock)
    except ValueError as e:
        return fail(f"mcpmesh_assertion: {e}")
    try:
        identity = verifier.verify(stdin.read(1 << 20).strip())
    except VerificationError as e:
        return fail(str(e))
    stdout.write(json.dumps(dict(identity.claims), separators=(",", ":")) + "\n")
    return 0


def main() -> None:
    sys.exit(run(sys.argv[1:], sys.stdin, sys.stdout, sys.stderr))


if __name__ == "__main__":
    main()
