"""The acv client: signed requests, typed results, safe automatic retries."""

from __future__ import annotations

import http.client
import json
import random
import ssl
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple, Type, TypeVar
from urllib.parse import urlsplit

from ._version import __version__
from .errors import (
    ApiError,
    TransportError,
    error_for_status,
    parse_retry_after,
)
from .models import Code, CodePage, Project, ProjectStatistics, ReactivateResult, VerifyResult
from .signing import body_sha256, build_query, encode_path_segment, new_nonce, sign, string_to_sign

__all__ = ["Client", "RETRY_STATUSES"]

#: Statuses retried automatically (with the same Idempotency-Key and body on verify and
#: reactivate). 429 waits for its Retry-After. No other 4xx is ever retried; neither is 500.
RETRY_STATUSES = frozenset({429, 502, 503, 504})

_JSON_CT = "application/json"

_R = TypeVar("_R", VerifyResult, ReactivateResult)


@dataclass(frozen=True)
class _Response:
    status: int
    headers: Dict[str, str]
    body: bytes


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect would change the signed path: surface it as an error instead of following."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


def _check_idempotency_key(key: str) -> str:
    if not isinstance(key, str) or not 1 <= len(key) <= 255 or any(not 0x20 <= ord(c) <= 0x7E for c in key):
        raise ValueError("idempotency_key must be 1 to 255 printable ASCII characters")
    return key


def _lower_headers(items: Any) -> Dict[str, str]:
    return {str(k).lower(): str(v) for k, v in items}


class Client:
    """A client of one project's endpoints, with one API key.

    :param base_url: the service's address, e.g. ``https://acv.example.com`` (a path prefix is
        kept and signed as part of the path).
    :param api_key: the key id (sent as ``X-API-Key``).
    :param api_secret: the key's 64-hex-character secret (signs, never sent).
    :param project_id: the project bound to the key.
    :param timeout: seconds for connecting and for each read of one attempt.
    :param retries: how many times one call is retried after its first attempt on a connection
        error, a timeout, a lost response, 502/503/504 or 429. Verify and reactivate retry with
        the same Idempotency-Key and body, so a retry never redeems twice. 0 disables retries.
    :param use_nonce: send ``X-Nonce`` (default). Without it the service refuses two identical
        POSTs within one second as a replay; turn it off only for a server that does not know
        the extension (the original CodeGate service ignores it, as it must).
    :param backoff: first retry delay in seconds; doubles each retry, with jitter.
    :param max_backoff: upper bound of one retry delay.
    :param max_retry_after: the longest ``Retry-After`` the client waits for on its own; a 429
        asking for longer is raised as :class:`~acv.errors.RateLimitError` at once.
    :param user_agent: extra product token prepended to the User-Agent.
    :param ssl_context: TLS settings for https (the system defaults when None).
    :param clock: the clock for ``X-Timestamp`` (``time.time`` when None).

    A client holds no connection and no mutable state: it is safe to share between threads.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        api_secret: str,
        project_id: str,
        timeout: float = 10.0,
        retries: int = 3,
        *,
        use_nonce: bool = True,
        backoff: float = 0.25,
        max_backoff: float = 8.0,
        max_retry_after: float = 60.0,
        user_agent: Optional[str] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
        clock: Optional[Callable[[], float]] = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        if retries < 0:
            raise ValueError("retries must be >= 0")
        if not api_key or not api_secret or not project_id:
            raise ValueError("api_key, api_secret and project_id are required")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.project_id = project_id
        self.timeout = timeout
        self.retries = retries
        self.use_nonce = use_nonce
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self._secret = api_secret
        self._origin = f"{parts.scheme}://{parts.netloc}"
        self._prefix = parts.path.rstrip("/")
        self._clock: Callable[[], float] = clock or time.time
        self._sleep: Callable[[float], None] = time.sleep
        ua = f"acv-python/{__version__}"
        self._user_agent = f"{user_agent} {ua}" if user_agent else ua
        handlers: List[urllib.request.BaseHandler] = [_NoRedirect()]
        if ssl_context is not None:
            handlers.append(urllib.request.HTTPSHandler(context=ssl_context))
        self._opener = urllib.request.build_opener(*handlers)

    def __repr__(self) -> str:
        return f"Client(base_url={self.base_url!r}, api_key={self.api_key!r}, project_id={self.project_id!r})"

    # ----- reads -------------------------------------------------------------------------

    def get_project(self) -> Project:
        """The project, with its ``statistics``."""
        data, _ = self._call("GET", "")
        return Project.from_json(data)

    def get_statistics(self) -> ProjectStatistics:
        """The project's statistics: state counts, usage rate, recent verifications."""
        data, _ = self._call("GET", "/statistics")
        return ProjectStatistics.from_json(data)

    def list_codes(
        self,
        page: Optional[int] = None,
        page_size: Optional[int] = None,
        status: Optional[str] = None,
        search: Optional[str] = None,
    ) -> CodePage:
        """A page of codes, newest first. ``status`` is ``unused``, ``used``, ``disabled``,
        ``expired`` or ``all``; ``search`` a case-insensitive substring of the code value
        (``%`` and ``_`` match themselves). Parameters left None (or empty strings) are not
        sent: the service's defaults are page 1, 20 per page, no filter."""
        params: List[Tuple[str, str]] = []
        if page is not None:
            params.append(("page", str(int(page))))
        if page_size is not None:
            params.append(("page_size", str(int(page_size))))
        if status:
            params.append(("status", status))
        if search:
            params.append(("search", search))
        data, _ = self._call("GET", "/codes", params=params)
        return CodePage.from_json(data)

    def iter_codes(
        self, status: Optional[str] = None, search: Optional[str] = None, page_size: int = 100
    ) -> Iterator[Code]:
        """Every code matching the filters, page by page. Codes created while iterating may
        shift pages (the list is newest first)."""
        page = 1
        while True:
            p = self.list_codes(page=page, page_size=page_size, status=status, search=search)
            yield from p.items
            if page >= p.total_pages or not p.items:
                return
            page += 1

    def get_code(self, code_id: str) -> Code:
        """One code by its id, with its ``verification_logs``."""
        if not code_id:
            raise ValueError("code_id must not be empty")
        data, _ = self._call("GET", "/codes/" + encode_path_segment(code_id))
        return Code.from_json(data, with_logs=True)

    def get_code_by_value(self, code: str) -> Code:
        """One code by its value (any printable text: it is percent-encoded into the path),
        with its ``verification_logs``."""
        if not code:
            raise ValueError("code must not be empty")
        data, _ = self._call("GET", "/codes/by-code/" + encode_path_segment(code))
        return Code.from_json(data, with_logs=True)

    # ----- operations --------------------------------------------------------------------

    def verify(
        self, code: str, verified_by: Optional[str] = None, idempotency_key: Optional[str] = None
    ) -> VerifyResult:
        """Redeems a code. A refusal (already used, expired, …) is a result with ``success``
        False and an ``error_code``, not an exception.

        The call carries an Idempotency-Key (a fresh uuid4 hex unless given), so the client
        retries it safely after a lost response: the service answers the retry with the stored
        result (``result.replayed`` is True) instead of ``CODE_ALREADY_USED``. Pass your own key
        (an order id, say) to make a later call, even from another process, the same logical
        operation."""
        body: Dict[str, Any] = {"code": code}
        if verified_by is not None:
            body["verified_by"] = verified_by
        return self._operation("/codes/verify", body, idempotency_key, VerifyResult)

    def reactivate(
        self,
        code: str,
        reactivated_by: Optional[str] = None,
        reason: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> ReactivateResult:
        """Resets a used code to unused (a refund, a mistaken verify). Retries and idempotency
        as for :meth:`verify`."""
        body: Dict[str, Any] = {"code": code}
        if reactivated_by is not None:
            body["reactivated_by"] = reactivated_by
        if reason is not None:
            body["reason"] = reason
        return self._operation("/codes/reactivate", body, idempotency_key, ReactivateResult)

    def _operation(
        self, suffix: str, body: Mapping[str, Any], idempotency_key: Optional[str], result: Type[_R]
    ) -> _R:
        """One verify or reactivate: under the caller's Idempotency-Key or a fresh uuid4 hex, so
        every retry of the call names the same operation."""
        key = _check_idempotency_key(idempotency_key) if idempotency_key is not None else uuid.uuid4().hex
        data, headers = self._call("POST", suffix, body=body, idempotency_key=key)
        return result.from_json(data, replayed=_replayed(headers), idempotency_key=key)

    # ----- transport ---------------------------------------------------------------------

    def _project_path(self, suffix: str) -> str:
        return f"{self._prefix}/api/v1/projects/{encode_path_segment(self.project_id)}{suffix}"

    def _error_class(self, status: int) -> Type[ApiError]:
        return error_for_status(status)

    def _call(
        self,
        method: str,
        suffix: str,
        *,
        params: Optional[List[Tuple[str, str]]] = None,
        body: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Tuple[Dict[str, Any], Dict[str, str]]:
        """Sends one logical call (retrying as configured) and decodes its JSON answer; a
        non-2xx answer raises the ApiError of its status."""
        path = self._project_path(suffix)
        query = build_query(params or [])
        raw = None
        if body is not None:
            # Serialised once: every retry sends these same bytes, so the Idempotency-Key names
            # the same request.
            raw = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        resp, attempts = self._send(method, path, query, raw, idempotency_key)

        def failure(cls: Type[ApiError], detail: str) -> ApiError:
            # Every failure of the call carries the whole answer and what was sent.
            return cls(
                resp.status,
                detail,
                headers=resp.headers,
                body=resp.body,
                method=method,
                path=path,
                idempotency_key=idempotency_key,
                attempts=attempts,
            )

        if not 200 <= resp.status < 300:
            raise failure(self._error_class(resp.status), _detail(resp.body))
        try:
            data = json.loads(resp.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise failure(ApiError, f"the answer is not JSON: {e}") from None
        if not isinstance(data, dict):
            raise failure(ApiError, "the answer is not a JSON object")
        return data, resp.headers

    def _send(
        self, method: str, path: str, query: str, body: Optional[bytes], idempotency_key: Optional[str]
    ) -> Tuple[_Response, int]:
        """One logical call: the first attempt and up to ``retries`` more. Each attempt is
        signed anew (fresh timestamp, nonce and signature); path, query, body and
        Idempotency-Key stay the same."""
        attempt = 0
        while True:
            attempt += 1
            last = attempt > self.retries
            try:
                resp = self._attempt(method, path, query, body, idempotency_key)
            except TransportError as e:
                if last:
                    e.attempts = attempt
                    e.idempotency_key = idempotency_key
                    raise
                self._sleep(self._delay(attempt))
                continue
            if resp.status not in RETRY_STATUSES or last:
                return resp, attempt
            delay = self._delay(attempt)
            retry_after = parse_retry_after(resp.headers.get("retry-after"))
            if retry_after is not None:
                if retry_after > self.max_retry_after:
                    return resp, attempt  # longer than we wait on our own: the caller decides
                # Wait what the service asks, plus a little jitter so clients do not return
                # in lockstep.
                delay = retry_after + random.uniform(0, min(1.0, self.backoff))
            self._sleep(delay)

    def _delay(self, attempt: int) -> float:
        """Exponential backoff with jitter: between half and all of backoff * 2**(attempt-1),
        at most max_backoff."""
        ceiling = min(self.max_backoff, self.backoff * (2.0 ** (attempt - 1)))
        return ceiling * random.uniform(0.5, 1.0)

    def _attempt(
        self, method: str, path: str, query: str, body: Optional[bytes], idempotency_key: Optional[str]
    ) -> _Response:
        timestamp = str(int(self._clock()))
        nonce = new_nonce() if self.use_nonce else None
        signature = sign(self._secret, string_to_sign(method, path, query, body_sha256(body), timestamp, nonce))
        headers = {
            "X-API-Key": self.api_key,
            "X-Timestamp": timestamp,
            "X-Signature": signature,
            "Accept": _JSON_CT,
            "User-Agent": self._user_agent,
        }
        if nonce:
            headers["X-Nonce"] = nonce
        if body is not None:
            headers["Content-Type"] = _JSON_CT
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        url = self._origin + path + ("?" + query if query else "")
        req = urllib.request.Request(url, data=body, headers=headers, method=method)
        try:
            with self._opener.open(req, timeout=self.timeout) as r:
                return _Response(r.status, _lower_headers(r.headers.items()), r.read())
        except urllib.error.HTTPError as e:
            try:
                payload = e.read()
            except (OSError, http.client.HTTPException):
                payload = b""
            finally:
                e.close()
            return _Response(e.code, _lower_headers(e.headers.items() if e.headers else []), payload)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", None) or e
            raise TransportError(f"{method} {path}: no answer: {reason!r}") from e


def _replayed(headers: Mapping[str, str]) -> bool:
    return headers.get("idempotent-replayed", "").strip().lower() == "true"


def _detail(body: bytes) -> str:
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return body[:200].decode("utf-8", "replace").strip()
    detail = data.get("detail") if isinstance(data, dict) else None
    if isinstance(detail, str):
        return detail
    return body[:200].decode("utf-8", "replace").strip()
