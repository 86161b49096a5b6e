"""Request signing, as the service's contract defines it.

The string to sign is these lines joined with ``\\n``::

    METHOD           upper case
    PATH             the path exactly as sent, still percent-encoded, without the query
    QUERY            the query's key=value pairs as sent (encoding untouched), sorted by key
    BODY_SHA256_HEX  lowercase hex SHA-256 of the raw body bytes (of b"" when there is none)
    TIMESTAMP        the X-Timestamp value, Unix seconds
    NONCE            only when X-Nonce is sent

``X-Signature`` is the lowercase hex HMAC-SHA256 of that string keyed with the API secret's
64-character hex text. The client builds its query once (:func:`build_query`) and signs exactly
the bytes it sends.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Iterable, List, Optional, Tuple
from urllib.parse import quote

__all__ = [
    "EMPTY_BODY_SHA256",
    "body_sha256",
    "build_query",
    "canonical_query",
    "encode_component",
    "encode_path_segment",
    "new_nonce",
    "sign",
    "string_to_sign",
]

#: Hex SHA-256 of the empty string: the body hash of a request without a body.
EMPTY_BODY_SHA256 = hashlib.sha256(b"").hexdigest()


def encode_component(value: str) -> str:
    """Percent-encodes one query key or value: RFC 3986 unreserved characters
    (letters, digits, ``-._~``) stay, everything else is UTF-8 ``%XX`` (a space is ``%20``,
    ``+`` is ``%2B``)."""
    return quote(value, safe="")


def encode_path_segment(value: str) -> str:
    """Percent-encodes one path segment (``/`` included). A segment that is exactly ``.`` or
    ``..`` is written ``%2E`` / ``%2E%2E`` so that no URL normaliser on the way removes it."""
    encoded = quote(value, safe="")
    if encoded in (".", ".."):
        encoded = "%2E" * len(encoded)
    return encoded


def build_query(params: Iterable[Tuple[str, str]]) -> str:
    """Builds the query string the client sends: each key and value through
    :func:`encode_component`, the pairs sorted by key (then value), joined by ``&``. Because it
    is already sorted, the string sent and the QUERY line signed are the same bytes."""
    pairs = sorted((encode_component(k), encode_component(v)) for k, v in params)
    return "&".join(k + "=" + v for k, v in pairs)


def canonical_query(raw_query: str) -> str:
    """The QUERY line for a raw query as sent: its ``key=value`` pairs, encoding untouched,
    sorted by key then value (byte order), empty pairs dropped, joined by ``&``."""
    if not raw_query:
        return ""
    pairs: List[Tuple[bytes, bytes, str]] = []
    for part in raw_query.split("&"):
        if not part:
            continue
        key, sep, value = part.partition("=")
        pairs.append((key.encode("utf-8"), value.encode("utf-8"), part))
    pairs.sort(key=lambda p: (p[0], p[1]))
    return "&".join(p[2] for p in pairs)


def body_sha256(body: Optional[bytes]) -> str:
    """Lowercase hex SHA-256 of the raw body bytes (of the empty string when there is none)."""
    if not body:
        return EMPTY_BODY_SHA256
    return hashlib.sha256(body).hexdigest()


def string_to_sign(
    method: str,
    path: str,
    query: str,
    body_hash: str,
    timestamp: str,
    nonce: Optional[str] = None,
) -> str:
    """The contract's string to sign; ``query`` is the raw query as sent (without ``?``)."""
    lines = [method.upper(), path, canonical_query(query), body_hash, timestamp]
    if nonce:
        lines.append(nonce)
    return "\n".join(lines)


def sign(secret: str, to_sign: str) -> str:
    """Lowercase hex HMAC-SHA256 of ``to_sign``, keyed with the secret's text."""
    return hmac.new(secret.encode("utf-8"), to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def new_nonce() -> str:
    """A fresh X-Nonce: 32 characters of ``[A-Za-z0-9_-]`` (24 random bytes)."""
    return secrets.token_urlsafe(24)
