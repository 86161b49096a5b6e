"""Live: the CodeGate-compatible client (``acv.codegate``) with the original SDK's names,
arguments and plain-dict results, and the original signing form against the service."""

from __future__ import annotations

import inspect
import json
import time
import urllib.error
import urllib.request
import uuid
from urllib.parse import urlencode

import pytest

import acv
from acv import codegate
from acv.codegate import CodeGateClient, generate_signature
from livekit import Fixtures, Tenant

# The original codegate_sdk.CodeGateClient's methods and their parameters.
ORIGINAL_API = {
    "__init__": ["self", "api_key", "secret", "project_id", "base_url"],
    "get_project": ["self"],
    "list_codes": ["self", "page", "page_size", "status", "search"],
    "get_code": ["self", "code_id"],
    "get_code_by_code": ["self", "code"],
    "verify_code": ["self", "code", "verified_by"],
    "reactivate_code": ["self", "code", "reactivated_by", "reason"],
    "get_statistics": ["self"],
}


@pytest.mark.parametrize("name", sorted(ORIGINAL_API))
def test_original_names_and_positional_parameters(name: str) -> None:
    params = [
        p.name
        for p in inspect.signature(getattr(CodeGateClient, name)).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    assert params == ORIGINAL_API[name]
    assert codegate.EMPTY_STRING_HASH == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


@pytest.fixture(scope="module")
def cg(base_url: str, tenant: Tenant) -> CodeGateClient:
    # Keyword arguments exactly as the original SDK's README writes them.
    return CodeGateClient(api_key=tenant.key_id, secret=tenant.secret, project_id=tenant.project_id, base_url=base_url)


def test_reads_return_plain_dicts(cg: CodeGateClient, fx: Fixtures, tenant: Tenant) -> None:
    tag = uuid.uuid4().hex[:8]
    values = [f"{tag} cg/é 1", f"{tag} cg+%& 2"]
    fx.codes(tenant, values)

    project = cg.get_project()
    assert isinstance(project, dict) and project["id"] == tenant.project_id
    assert set(project["statistics"]) >= {"total_codes", "used_codes", "unused_codes", "disabled_codes", "expired_codes"}

    page = cg.list_codes(page=1, page_size=20, status="unused", search=f"{tag} cg+%&")
    assert isinstance(page, dict) and [c["code"] for c in page["items"]] == [values[1]]
    assert page["page"] == 1 and page["page_size"] == 20
    assert cg.list_codes(search=tag)["total"] == 2

    by_code = cg.get_code_by_code(values[0])
    assert by_code["code"] == values[0] and by_code["verification_logs"] == []
    assert cg.get_code(by_code["id"]) == by_code
    assert cg.get_code_by_value(values[1])["code"] == values[1]


def test_verify_reactivate_statistics(cg: CodeGateClient, fx: Fixtures, tenant: Tenant) -> None:
    v = "cg-" + uuid.uuid4().hex
    fx.codes(tenant, [v])
    r = cg.verify_code(code=v, verified_by="user123")
    assert r["success"] is True and r["verified_at"] and r["error_code"] is None
    again = cg.verify_code(v)
    assert again["success"] is False and again["error_code"] == "CODE_ALREADY_USED"
    assert cg.verify_code("cg-missing-" + uuid.uuid4().hex)["error_code"] == "CODE_NOT_FOUND"

    stats = cg.get_statistics()
    assert stats["project_id"] == tenant.project_id
    assert set(stats) >= {"total_codes", "used_codes", "unused_codes", "disabled_codes", "expired_codes",
                          "usage_rate", "recent_verifications"}

    rr = cg.reactivate_code(v, reactivated_by="support", reason="refund")
    assert rr["success"] is True and rr["reactivated_at"]
    assert cg.reactivate_code(v)["error_code"] == "CODE_ALREADY_UNUSED"


def test_http_errors_keep_the_original_handlers_working(base_url: str, tenant: Tenant) -> None:
    bad = CodeGateClient(tenant.key_id, "0" * 64, tenant.project_id, base_url)
    with pytest.raises(acv.AuthenticationError) as ei:
        bad.get_project()
    e = ei.value
    assert e.response.status_code == 401 and e.status == 401  # type: ignore[attr-defined]
    assert e.response.json()["detail"] == e.detail  # type: ignore[attr-defined]
    try:
        import requests  # noqa: F401  (present when something else installed it)
    except ImportError:
        return
    import requests.exceptions

    assert isinstance(e, requests.exceptions.HTTPError)
    assert isinstance(e, requests.exceptions.RequestException)

    with pytest.raises(requests.exceptions.HTTPError):
        bad.verify_code("x")


def test_transport_errors_are_typed() -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    cg = CodeGateClient("k" * 32, "s" * 64, "p" * 32, f"http://127.0.0.1:{port}", retries=0)
    with pytest.raises(acv.TransportError) as ei:
        cg.verify_code("x")
    assert ei.value.idempotency_key


def test_original_signing_form_is_accepted(base_url: str, tenant: Tenant) -> None:
    # Sign as the original SDK does (five lines, the query as urlencode of the sorted pairs,
    # no nonce) and send as it does (urlencode in the caller's order).
    path = f"/api/v1/projects/{tenant.project_id}/codes"
    params = {"page": "1", "page_size": "20", "search": "it's (really) é + 100% & more!"}
    ts = int(time.time())
    sig = generate_signature("GET", path, params, None, ts, tenant.secret)
    req = urllib.request.Request(
        f"{base_url}{path}?{urlencode(params)}",
        headers={"X-API-Key": tenant.key_id, "X-Timestamp": str(ts), "X-Signature": sig, "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200
        assert json.loads(r.read())["total"] == 0

    body = json.dumps({"code": "no such code é"}, ensure_ascii=False)
    vpath = f"/api/v1/projects/{tenant.project_id}/codes/verify"
    sig = generate_signature("POST", vpath, None, body, ts, tenant.secret)
    req = urllib.request.Request(
        f"{base_url}{vpath}", data=body.encode("utf-8"), method="POST",
        headers={"X-API-Key": tenant.key_id, "X-Timestamp": str(ts), "X-Signature": sig, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            assert json.loads(r.read())["error_code"] == "CODE_NOT_FOUND"
    except urllib.error.HTTPError as e:  # pragma: no cover - shows the detail on failure
        pytest.fail(f"HTTP {e.code}: {e.read()!r}")


NO_REQUESTS = r'''
import sys, threading, json
from http.server import BaseHTTPRequestHandler, HTTPServer
sys.modules["requests"] = None  # as if requests were not installed
sys.modules["requests.exceptions"] = None

class H(BaseHTTPRequestHandler):
    def do_GET(self):
        raw = json.dumps({"detail": "Invalid signature"}).encode()
        self.send_response(401)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)
    def log_message(self, *a):
        pass

srv = HTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
import acv
from acv.codegate import CodeGateClient
cg = CodeGateClient("k" * 32, "s" * 64, "p" * 32, "http://127.0.0.1:%d" % srv.server_address[1])
try:
    cg.get_project()
except acv.AuthenticationError as e:
    assert type(e) is acv.AuthenticationError, type(e).__mro__
    assert e.response.status_code == 401 and e.detail == "Invalid signature"
    print("ok")
'''


def test_without_requests_installed() -> None:
    import os
    import subprocess
    import sys

    # The child imports the same acv as this suite (src/ of the checkout, or an install).
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(acv.__file__)))
    out = subprocess.run([sys.executable, "-c", NO_REQUESTS], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
