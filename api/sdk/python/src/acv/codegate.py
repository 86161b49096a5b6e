"""Drop-in replacement for the original CodeGate Python SDK (``codegate_sdk``).

Switch by changing one import::

    from codegate_sdk import CodeGateClient      # before
    from acv.codegate import CodeGateClient      # after

:class:`CodeGateClient` has the original's constructor (``api_key, secret, project_id,
base_url``) and methods (``get_project``, ``list_codes``, ``get_code``, ``get_code_by_code``,
``verify_code``, ``reactivate_code``, ``get_statistics``), each returning the answer's JSON as a
plain ``dict``, as the original does. ``generate_signature`` and ``EMPTY_STRING_HASH`` are here
too, for code that signs its own requests.

What changes underneath, all additive: requests are signed with an ``X-Nonce`` and the query as
sent, verify and reactivate carry an automatic ``Idempotency-Key``, and connection errors,
timeouts, lost responses, 502/503/504 and 429 are retried (``retries=0`` turns that off).

Errors: the original raised ``requests.exceptions.HTTPError`` (with ``e.response.status_code``)
for any non-2xx answer. Here a non-2xx answer raises the typed :class:`acv.ApiError` subclass of
its status (:class:`acv.AuthenticationError` for 401, …), which also has
``e.response.status_code``; when ``requests`` is importable it is a
``requests.exceptions.HTTPError`` as well, so existing ``except`` clauses keep working. A request
that got no answer raises :class:`acv.TransportError` (also a
``requests.exceptions.ConnectionError`` when ``requests`` is importable). This module never
needs ``requests``.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import uuid
from typing import Any, Dict, List, Mapping, Optional, Tuple, Type, Union
from urllib.parse import urlencode

from .client import Client, _check_idempotency_key
from .errors import ApiError, TransportError, error_for_status
from .signing import EMPTY_BODY_SHA256, encode_path_segment

__all__ = ["CodeGateClient", "EMPTY_STRING_HASH", "generate_signature"]

#: The SHA-256 of the empty string (the original SDK's name for it).
EMPTY_STRING_HASH = EMPTY_BODY_SHA256

try:  # only to keep ``except requests.exceptions.HTTPError`` working; never required
    import requests.exceptions as _rq  # type: ignore[import-untyped]

    _RQ_HTTP_ERROR: Optional[Type[BaseException]] = _rq.HTTPError
    _RQ_CONNECTION_ERROR: Optional[Type[BaseException]] = _rq.ConnectionError
except Exception:  # noqa: BLE001 - requests missing or broken: plain typed errors then
    _RQ_HTTP_ERROR = None
    _RQ_CONNECTION_ERROR = None


def generate_signature(
    method: str,
    path: str,
    query_params: Optional[Mapping[str, Any]] = None,
    body: Optional[Union[str, bytes]] = None,
    timestamp: Optional[int] = None,
    secret: Optional[str] = None,
) -> str:
    """The original SDK's signature: HMAC-SHA256 (hex) of ``METHOD\\nPATH\\nQUERY\\n
    BODY_SHA256\\nTIMESTAMP``, where QUERY is Python's ``urlencode`` of the parameters sorted by
    key. The service accepts this form (the contract lists it); send the query as
    ``urlencode`` of the same parameters. New code should use :class:`acv.Client`, which signs
    the query exactly as sent and adds a nonce."""
    if timestamp is None:
        raise ValueError("timestamp is required")
    if secret is None:
        raise ValueError("secret is required")
    query = urlencode(sorted((str(k), str(v)) for k, v in query_params.items())) if query_params else ""
    if body:
        raw = body.encode("utf-8") if isinstance(body, str) else body
        body_hash = hashlib.sha256(raw).hexdigest()
    else:
        body_hash = EMPTY_STRING_HASH
    to_sign = f"{method.upper()}\n{path}\n{query}\n{body_hash}\n{timestamp}"
    return hmac.new(secret.encode("utf-8"), to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


class CompatResponse:
    """The part of a ``requests.Response`` that error handlers written for the original SDK
    read: ``status_code``, ``headers``, ``content``, ``text``, ``json()``, ``reason``, ``url``,
    ``ok``."""

    def __init__(self, status_code: int, headers: Mapping[str, str], content: bytes, url: str) -> None:
        self.status_code = status_code
        self.headers: Dict[str, str] = dict(headers)
        self.content = content
        self.url = url
        self.reason = http.client.responses.get(status_code, "")

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    @property
    def ok(self) -> bool:
        return self.status_code < 400

    def json(self) -> Any:
        return json.loads(self.content.decode("utf-8"))

    def __repr__(self) -> str:
        return f"<CompatResponse [{self.status_code}]>"


_compat_classes: Dict[Type[BaseException], Type[BaseException]] = {}


def _compat_class(base: Type[BaseException], extra: Optional[Type[BaseException]]) -> Type[BaseException]:
    """``base`` itself, or (when requests is importable) a subclass of both ``base`` and the
    requests exception the original SDK raised in its place."""
    if extra is None:
        return base
    cls = _compat_classes.get(base)
    if cls is None:
        cls = type(base.__name__, (base, extra), {"__module__": __name__})
        _compat_classes[base] = cls
    return cls


class _CompatClient(Client):
    """A Client whose HTTP errors are also what the original SDK's callers catch."""

    def _error_class(self, status: int) -> Type[ApiError]:
        return _compat_class(error_for_status(status), _RQ_HTTP_ERROR)  # type: ignore[return-value]


class CodeGateClient:
    """The original CodeGate SDK's client, over :class:`acv.Client`.

    :param api_key: API key (32 hex characters).
    :param secret: API secret (64 hex characters).
    :param project_id: project id (32 hex characters).
    :param base_url: the service's address.
    :param timeout, retries, use_nonce: as for :class:`acv.Client` (extensions; keyword only).
    """

    def __init__(
        self,
        api_key: str,
        secret: str,
        project_id: str,
        base_url: str = "https://api.example.com",
        *,
        timeout: float = 10.0,
        retries: int = 3,
        use_nonce: bool = True,
        **client_options: Any,
    ) -> None:
        self.api_key = api_key
        self.secret = secret
        self.project_id = project_id
        self.base_url = base_url.rstrip("/")
        #: The typed client underneath, for the calls this class has no name for.
        self.client = _CompatClient(
            self.base_url, api_key, secret, project_id, timeout=timeout, retries=retries,
            use_nonce=use_nonce, **client_options,
        )

    def _request(
        self,
        method: str,
        suffix: str,
        *,
        params: Optional[List[Tuple[str, str]]] = None,
        body: Optional[Dict[str, Any]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Dict[str, Any]:
        try:
            data, _ = self.client._call(method, suffix, params=params, body=body, idempotency_key=idempotency_key)
        except ApiError as e:
            e.response = CompatResponse(e.status, e.headers, e.body, self.base_url + e.path)  # type: ignore[attr-defined]
            raise
        except TransportError as e:
            cls = _compat_class(TransportError, _RQ_CONNECTION_ERROR)
            if cls is TransportError:
                raise
            err = cls(e.message, idempotency_key=e.idempotency_key, attempts=e.attempts)  # type: ignore[call-arg]
            raise err from e
        return data

    # ----- the original SDK's methods --------------------------------------------------------

    def get_project(self) -> Dict[str, Any]:
        """The project, with ``statistics``."""
        return self._request("GET", "")

    def list_codes(
        self,
        page: int = 1,
        page_size: int = 20,
        status: Optional[str] = None,
        search: Optional[str] = None,
    ) -> Dict[str, Any]:
        """A page of codes: ``{"items", "total", "page", "page_size", "total_pages"}``."""
        params = [("page", str(page)), ("page_size", str(page_size))]
        if status:
            params.append(("status", str(status)))
        if search:
            params.append(("search", str(search)))
        return self._request("GET", "/codes", params=params)

    def get_code(self, code_id: str) -> Dict[str, Any]:
        """One code by id, with ``verification_logs``."""
        return self._request("GET", "/codes/" + encode_path_segment(code_id))

    def get_code_by_code(self, code: str) -> Dict[str, Any]:
        """One code by its value, with ``verification_logs``."""
        return self._request("GET", "/codes/by-code/" + encode_path_segment(code))

    #: The name :class:`acv.Client` uses.
    get_code_by_value = get_code_by_code

    def verify_code(
        self, code: str, verified_by: Optional[str] = None, *, idempotency_key: Optional[str] = None
    ) -> Dict[str, Any]:
        """Redeems a code: ``{"success", "code_id", "code", "verified_at", "message",
        "error_code"}``; a refusal is ``success`` False with an ``error_code``."""
        body: Dict[str, Any] = {"code": code}
        if verified_by:
            body["verified_by"] = verified_by
        return self._request("POST", "/codes/verify", body=body, idempotency_key=_key(idempotency_key))

    def reactivate_code(
        self,
        code: str,
        reactivated_by: Optional[str] = None,
        reason: Optional[str] = None,
        *,
        idempotency_key: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Resets a used code to unused: ``{"success", "code_id", "code", "reactivated_at",
        "message", "error_code"}``."""
        body: Dict[str, Any] = {"code": code}
        if reactivated_by:
            body["reactivated_by"] = reactivated_by
        if reason:
            body["reason"] = reason
        return self._request("POST", "/codes/reactivate", body=body, idempotency_key=_key(idempotency_key))

    def get_statistics(self) -> Dict[str, Any]:
        """The project's statistics: counts, ``usage_rate``, ``recent_verifications``."""
        return self._request("GET", "/statistics")


def _key(given: Optional[str]) -> str:
    return _check_idempotency_key(given) if given is not None else uuid.uuid4().hex
