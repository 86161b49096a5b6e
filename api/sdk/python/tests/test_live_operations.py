"""Live: verify and reactivate outcomes, disabled and expired codes and projects, and the HTTP
refusals (401, 403, 400), against the real service."""

from __future__ import annotations

import time
import uuid
from typing import Optional

import pytest

from acv import AuthenticationError, BadRequestError, Client, PermissionDeniedError
from livekit import Fixtures, Tenant, eventually, make_client


def test_verify_then_already_used(client: Client, new_codes) -> None:
    (v,) = new_codes("verify")
    r = client.verify(v, verified_by="till-1")
    assert r.success and r.error_code is None and not r.replayed
    assert r.code == v and r.code_id and r.message == "Code verified successfully"
    assert r.verified_at is not None and abs(r.verified_at - time.time()) < 60

    c = client.get_code(r.code_id)  # read your writes
    assert c.status is True and c.state == "used"
    assert c.verified_at == r.verified_at and c.verified_by == "till-1"

    again = client.verify(v, verified_by="till-2")
    assert not again.success and again.error_code == "CODE_ALREADY_USED"
    assert again.message == "Code has already been used" and again.code_id == r.code_id

    c = eventually(lambda: client.get_code(r.code_id), lambda c: len(c.verification_logs or []) >= 2)
    logs = c.verification_logs or []
    assert sorted(log.result for log in logs) == ["failed", "success"]
    ok = next(log for log in logs if log.result == "success")
    failed = next(log for log in logs if log.result == "failed")
    assert ok.verified_by == "till-1" and ok.action == "verify" and ok.ip_address
    assert failed.reason == "CODE_ALREADY_USED" and failed.verified_by == "till-2"


def test_reactivate(client: Client, new_codes) -> None:
    (v,) = new_codes("reactivate")
    assert client.verify(v).success
    r = client.reactivate(v, reactivated_by="support", reason="refund")
    assert r.success and r.message == "Code reactivated successfully" and not r.replayed
    assert r.reactivated_at is not None and r.code == v
    c = client.get_code_by_value(v)
    assert c.status is False and c.verified_at is None and c.verified_by is None and c.state == "unused"

    again = client.reactivate(v)
    assert not again.success and again.error_code == "CODE_ALREADY_UNUSED"
    assert again.message == "Code is already unused"
    assert client.verify(v).success  # usable again

    c = eventually(lambda: client.get_code_by_value(v),
                   lambda c: any(log.result == "reactivated" for log in c.verification_logs or []))
    log = next(log for log in c.verification_logs or [] if log.result == "reactivated")
    assert log.verified_by == "support" and log.reason == "refund" and log.action == "reactivate"


def test_code_not_found(client: Client) -> None:
    missing = "missing " + uuid.uuid4().hex
    r = client.verify(missing)
    assert not r.success and r.error_code == "CODE_NOT_FOUND" and r.code_id is None
    assert r.message == "Code not found"
    rr = client.reactivate(missing)
    assert not rr.success and rr.error_code == "CODE_NOT_FOUND" and rr.code_id is None


def test_disabled_code(client: Client, fx: Fixtures, tenant: Tenant, new_codes) -> None:
    (v,) = new_codes("disabled")
    fx.set_code_disabled(tenant, v, True)
    r = eventually(lambda: client.verify(v), lambda r: r.error_code == "CODE_DISABLED")
    assert not r.success and r.error_code == "CODE_DISABLED" and r.message == "Code is disabled"
    assert client.reactivate(v).error_code == "CODE_DISABLED"
    c = client.get_code_by_value(v)
    assert c.is_disabled and c.state == "disabled"
    fx.set_code_disabled(tenant, v, False)
    assert eventually(lambda: client.verify(v), lambda r: r.success).success


def test_expired_code(client: Client, new_codes) -> None:
    (v,) = new_codes("expired", expires_at=int(time.time()) - 60)
    r = client.verify(v)
    assert not r.success and r.error_code == "CODE_EXPIRED" and r.message == "Code is expired"
    c = client.get_code_by_value(v)
    assert c.is_expired and c.state == "expired" and c.expires_at is not None


def test_disabled_project(base_url: str, fx: Fixtures) -> None:
    t = fx.tenant()
    fx.codes(t, ["dp-1"])
    c = make_client(base_url, t)
    fx.set_project_enabled(t, False)
    r = eventually(lambda: c.verify("dp-1"), lambda r: r.error_code == "PROJECT_DISABLED")
    assert not r.success and r.error_code == "PROJECT_DISABLED" and r.message == "Project is disabled"

    def read() -> Optional[AuthenticationError]:
        try:
            c.get_project()
        except AuthenticationError as e:
            return e
        return None

    err = eventually(read, lambda e: e is not None)
    assert err is not None and err.status == 401 and err.attempts == 1
    fx.set_project_enabled(t, True)
    assert eventually(lambda: c.verify("dp-1"), lambda r: r.success).success


def test_expired_project(base_url: str, fx: Fixtures) -> None:
    now = int(time.time())
    t = fx.tenant(expires_at=now - 60)
    fx.codes(t, ["ep-own-none"])
    fx.codes(t, ["ep-own-later"], expires_at=now + 3600)
    c = make_client(base_url, t)
    p = c.get_project()  # an expired project stays readable
    assert p.expires_at == now - 60 and p.status is True
    assert c.verify("ep-own-none").error_code == "CODE_EXPIRED"
    r = c.verify("ep-own-later")
    assert not r.success and r.error_code == "PROJECT_EXPIRED" and r.message == "Project is expired"


def test_wrong_secret_is_authentication_error(base_url: str, tenant: Tenant) -> None:
    bad = Client(base_url, tenant.key_id, "0" * 64, tenant.project_id, retries=3)
    with pytest.raises(AuthenticationError) as ei:
        bad.get_project()
    assert ei.value.status == 401 and ei.value.detail and ei.value.attempts == 1
    with pytest.raises(AuthenticationError) as ei:
        bad.verify("anything")
    assert ei.value.attempts == 1 and ei.value.idempotency_key


def test_revoked_key(base_url: str, fx: Fixtures) -> None:
    t = fx.tenant()
    c = make_client(base_url, t)
    c.get_project()
    fx.revoke(t)

    def read() -> Optional[AuthenticationError]:
        try:
            c.get_project()
        except AuthenticationError as e:
            return e
        return None

    assert eventually(read, lambda e: e is not None) is not None


def test_other_projects_path_is_403(base_url: str, fx: Fixtures, tenant: Tenant) -> None:
    other = fx.tenant()
    c = Client(base_url, tenant.key_id, tenant.secret, other.project_id)
    with pytest.raises(PermissionDeniedError) as ei:
        c.get_project()
    assert ei.value.status == 403
    with pytest.raises(PermissionDeniedError):
        c.verify("x")


def test_code_too_long_is_400(client: Client) -> None:
    with pytest.raises(BadRequestError) as ei:
        client.verify("x" * 101)
    assert ei.value.status == 400


def test_two_identical_verifies_in_one_second_both_authenticate(base_url: str, tenant: Tenant, new_codes) -> None:
    (v,) = new_codes("twice")
    frozen = float(int(time.time()))
    c = make_client(base_url, tenant, clock=lambda: frozen)  # same X-Timestamp on both
    first, second = c.verify(v), c.verify(v)
    assert first.success
    assert not second.success and second.error_code == "CODE_ALREADY_USED"
    c.get_code_by_value(v), c.get_code_by_value(v)  # identical GETs too


def test_without_nonce_the_same_second_is_a_replay(base_url: str, tenant: Tenant, new_codes) -> None:
    # What the nonce prevents: the original five-line signature of two identical POSTs within
    # the same second is the same string, and the service refuses the second as a replay.
    (v,) = new_codes("nonce-off")
    frozen = float(int(time.time()))
    c = make_client(base_url, tenant, clock=lambda: frozen, use_nonce=False)
    c.get_project(), c.get_project()  # GETs without a nonce are not replay-checked
    assert c.verify(v).success
    with pytest.raises(AuthenticationError) as ei:
        c.verify(v)
    assert "replay" in ei.value.detail.lower()
