"""Offline: the retry policy against a scripted local HTTP server. Each script step is one
answer: (status, headers, body), or "drop" to close the connection without an answer, or
("sleep", seconds) to answer 200 too late."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from acv import (
    ApiError,
    AuthenticationError,
    BadRequestError,
    Client,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    TransportError,
)
from acv.signing import body_sha256, sign, string_to_sign

SECRET = "ab" * 32
OK_VERIFY = {"success": True, "code_id": "c" * 32, "code": "X", "verified_at": 1, "message": "Code verified successfully", "error_code": None}


class Stub:
    def __init__(self) -> None:
        self.script: List[Any] = []
        self.requests: List[Dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                path, _, query = self.path.partition("?")
                stub.requests.append({"method": self.command, "path": path, "query": query, "headers": dict(self.headers), "body": body})
                step = stub.script.pop(0) if stub.script else (200, {}, OK_VERIFY)
                if step == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if isinstance(step, tuple) and step[0] == "sleep":
                    time.sleep(step[1])
                    step = (200, {}, OK_VERIFY)
                status, headers, payload = step
                raw = json.dumps(payload).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = _serve
            do_POST = _serve

        class QuietServer(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a late answer to a client that timed out: a broken pipe, expected

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub() -> Iterator[Stub]:
    s = Stub()
    yield s
    s.close()


def client_for(url: str, **kw: Any) -> Tuple[Client, List[float]]:
    kw.setdefault("retries", 3)
    c = Client(url, "k" * 32, SECRET, "p" * 32, **kw)
    slept: List[float] = []
    c._sleep = slept.append  # no real waiting in these tests
    return c, slept


def signature_ok(r: Dict[str, Any]) -> bool:
    h = r["headers"]
    sts = string_to_sign(r["method"], r["path"], r["query"], body_sha256(r["body"]), h["X-Timestamp"], h.get("X-Nonce"))
    return sign(SECRET, sts) == h["X-Signature"]


def test_verify_retries_5xx_with_the_same_key_and_body_and_a_fresh_signature(stub: Stub) -> None:
    stub.script = [(503, {}, {"detail": "Service temporarily unavailable"}), (502, {}, {"detail": "bad gateway"}),
                   (504, {}, {"detail": "timeout"}), (200, {"Idempotent-Replayed": "true"}, OK_VERIFY)]
    c, slept = client_for(stub.url)
    r = c.verify("X", verified_by="me")
    assert r.success and r.replayed
    assert len(stub.requests) == 4
    keys = {q["headers"]["Idempotency-Key"] for q in stub.requests}
    assert keys == {r.idempotency_key}
    assert len({q["body"] for q in stub.requests}) == 1
    assert json.loads(stub.requests[0]["body"]) == {"code": "X", "verified_by": "me"}
    assert len({q["headers"]["X-Nonce"] for q in stub.requests}) == 4
    assert len({q["headers"]["X-Signature"] for q in stub.requests}) == 4
    assert all(signature_ok(q) for q in stub.requests)
    assert len(slept) == 3 and all(0 < d <= c.max_backoff for d in slept)
    assert slept[2] > slept[0]  # exponential: 3rd delay's floor (0.5*4b) > 1st's ceiling (b)


def test_lost_response_is_retried_and_reports_the_replay(stub: Stub) -> None:
    stub.script = ["drop", (200, {"Idempotent-Replayed": "true"}, OK_VERIFY)]
    c, _ = client_for(stub.url)
    r = c.reactivate("X", idempotency_key="order-42")
    assert r.replayed and r.idempotency_key == "order-42"
    assert [q["headers"]["Idempotency-Key"] for q in stub.requests] == ["order-42", "order-42"]


def test_timeout_is_retried_then_transport_error_carries_the_key(stub: Stub) -> None:
    stub.script = [("sleep", 1.0), ("sleep", 1.0)]
    c, _ = client_for(stub.url, retries=1, timeout=0.2)
    with pytest.raises(TransportError) as ei:
        c.verify("X")
    assert ei.value.attempts == 2
    assert ei.value.idempotency_key and ei.value.idempotency_key == stub.requests[0]["headers"]["Idempotency-Key"]


def test_connection_refused_is_a_transport_error_after_the_retries() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    c, slept = client_for(f"http://127.0.0.1:{port}", retries=2)
    with pytest.raises(TransportError) as ei:
        c.get_project()
    assert ei.value.attempts == 3 and len(slept) == 2


def test_429_waits_for_retry_after(stub: Stub) -> None:
    stub.script = [(429, {"Retry-After": "2"}, {"detail": "Rate limit exceeded"}), (200, {}, OK_VERIFY)]
    c, slept = client_for(stub.url)
    assert c.verify("X").success
    assert len(slept) == 1 and 2 <= slept[0] <= 3


def test_429_longer_than_the_bound_is_raised_at_once(stub: Stub) -> None:
    stub.script = [(429, {"Retry-After": "3600"}, {"detail": "Rate limit exceeded"})]
    c, slept = client_for(stub.url, max_retry_after=30)
    with pytest.raises(RateLimitError) as ei:
        c.verify("X")
    assert ei.value.retry_after == 3600 and ei.value.status == 429
    assert len(stub.requests) == 1 and slept == []


@pytest.mark.parametrize(
    "status,cls",
    [(400, BadRequestError), (401, AuthenticationError), (403, PermissionDeniedError), (404, NotFoundError),
     (409, ConflictError), (413, ApiError), (500, ServerError)],
)
def test_other_errors_are_never_retried(stub: Stub, status: int, cls: type) -> None:
    stub.script = [(status, {}, {"detail": f"refused {status}"})]
    c, slept = client_for(stub.url)
    with pytest.raises(cls) as ei:
        c.verify("X")
    assert ei.value.status == status and ei.value.detail == f"refused {status}"
    assert len(stub.requests) == 1 and slept == []


def test_gets_retry_503_and_give_up_after_the_bound(stub: Stub) -> None:
    stub.script = [(503, {}, {"detail": "down"})] * 3
    c, slept = client_for(stub.url, retries=2)
    with pytest.raises(ServerError) as ei:
        c.get_statistics()
    assert ei.value.attempts == 3 and len(stub.requests) == 3 and len(slept) == 2
    assert all("Idempotency-Key" not in q["headers"] for q in stub.requests)


def test_retries_zero_sends_once(stub: Stub) -> None:
    stub.script = [(503, {}, {"detail": "down"})]
    c, _ = client_for(stub.url, retries=0)
    with pytest.raises(ServerError):
        c.verify("X")
    assert len(stub.requests) == 1


def test_business_refusal_is_a_result(stub: Stub) -> None:
    stub.script = [(200, {}, {"success": False, "code_id": None, "code": "X", "verified_at": None,
                              "message": "Code not found", "error_code": "CODE_NOT_FOUND"})]
    c, _ = client_for(stub.url)
    r = c.verify("X")
    assert not r.success and r.error_code == "CODE_NOT_FOUND" and r.code_id is None and not r.replayed


def test_base_url_path_prefix_is_kept_and_signed(stub: Stub) -> None:
    c, _ = client_for(stub.url + "/acv/")
    stub.script = [(200, {}, {"id": "p" * 32, "name": "n", "description": "", "status": True, "expires_at": None, "created_at": 1})]
    c.get_project()
    assert stub.requests[0]["path"] == "/acv/api/v1/projects/" + "p" * 32
    assert signature_ok(stub.requests[0])


def test_bad_idempotency_key_is_refused_locally() -> None:
    c, _ = client_for("http://127.0.0.1:9")
    with pytest.raises(ValueError):
        c.verify("X", idempotency_key="")
    with pytest.raises(ValueError):
        c.verify("X", idempotency_key="é")
