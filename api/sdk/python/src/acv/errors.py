"""Errors the client raises.

Every HTTP answer outside 2xx is an :class:`ApiError` (``status``, ``detail``), of the subclass
its status names. A business refusal of verify or reactivate (HTTP 200 with
``success: false``) is not an error: it is a result with ``success`` false and an
``error_code``. A request that got no answer at all, after the retries, is a
:class:`TransportError`.
"""

from __future__ import annotations

import email.utils
import time
from typing import Dict, Mapping, Optional, Type

__all__ = [
    "AcvError",
    "ApiError",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "ServerError",
    "TransportError",
    "error_for_status",
]


class AcvError(Exception):
    """Base of every error of this package.

    ``idempotency_key`` is the Idempotency-Key of the verify or reactivate that failed (None
    for reads): calling again with that key is safe, since the service answers a key it has
    already run with the stored result instead of running it twice.
    """

    def __init__(self, message: str, *, idempotency_key: Optional[str] = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.idempotency_key = idempotency_key
        self.attempts = attempts


class TransportError(AcvError):
    """No HTTP answer: connection refused or reset, a timeout, a response lost on the way.

    For verify and reactivate the outcome is unknown: the request may have run. Call again with
    ``idempotency_key=err.idempotency_key`` to learn it without running it twice.
    """


class ApiError(AcvError):
    """A non-2xx answer. ``status`` is the HTTP status, ``detail`` the body's ``detail``
    sentence, ``headers`` the response headers (names in lower case)."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        headers: Optional[Mapping[str, str]] = None,
        body: bytes = b"",
        method: str = "",
        path: str = "",
        idempotency_key: Optional[str] = None,
        attempts: int = 1,
    ) -> None:
        where = f" ({method} {path})" if method else ""
        super().__init__(
            f"HTTP {status}: {detail}{where}", idempotency_key=idempotency_key, attempts=attempts
        )
        self.status = status
        self.detail = detail
        self.headers: Dict[str, str] = {k.lower(): v for k, v in (headers or {}).items()}
        self.body = body
        self.method = method
        self.path = path

    @property
    def status_code(self) -> int:
        """The same as ``status``."""
        return self.status


class BadRequestError(ApiError):
    """400: malformed body, wrong types, bad query values, a code value too long."""


class AuthenticationError(ApiError):
    """401: unknown or revoked key, wrong signature, timestamp outside the window, a replayed
    request, or a disabled project. The detail says which; a clock problem names the server's
    time."""


class PermissionDeniedError(ApiError):
    """403: the key is valid but bound to another project than the one in the path."""


class NotFoundError(ApiError):
    """404: unknown code id, unknown code value (by-code), unknown project or route."""


class ConflictError(ApiError):
    """409: the Idempotency-Key was already used with a different request body."""


class PayloadTooLargeError(ApiError):
    """413: the request body is over 64 KiB."""


class RateLimitError(ApiError):
    """429: the key's rate limit is exceeded. ``retry_after`` is the ``Retry-After`` header in
    seconds (None when absent or unreadable)."""

    @property
    def retry_after(self) -> Optional[float]:
        return parse_retry_after(self.headers.get("retry-after"))


class ServerError(ApiError):
    """5xx: a fault of the service (500) or a dependency unavailable (503); the contract
    promises no partial state change."""


_BY_STATUS: Dict[int, Type[ApiError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    429: RateLimitError,
}


def error_for_status(status: int) -> Type[ApiError]:
    """The ApiError subclass for an HTTP status."""
    if status >= 500:
        return ServerError
    return _BY_STATUS.get(status, ApiError)


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """A ``Retry-After`` value in seconds: delta-seconds or an HTTP date; None if unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())
