"""Comparing secrets (bearer tokens, DI job keys) in constant time, whatever a client sent.

One owner for the comparison every service makes (``rpc.auth``, ``observe.metrics_http``).
Pure code, no I/O. Not for where tokens come from (``rpc.auth``).
"""

import hmac


def same_secret(given: str, expected: str) -> bool:
    """Whether ``given`` is ``expected``, in constant time. Compared as UTF-8 bytes:
    ``hmac.compare_digest`` raises on a non-ASCII str, and a hostile header must get a
    refusal, not a 500 or a dropped connection."""
    return hmac.compare_digest(
        given.encode("utf-8", "surrogateescape"), expected.encode("utf-8", "surrogateescape")
    )
