"""Live: Idempotency-Key and automatic retries, including a verify whose first response the
proxy loses after the service committed it."""

from __future__ import annotations

import time
import uuid

import pytest

from acv import Client, ConflictError
from livekit import Fixtures, Tenant, eventually, make_client


def test_lost_response_is_retried_and_the_code_is_verified_once(
    proxy_url: str, client: Client, fx: Fixtures, tenant: Tenant, new_codes
) -> None:
    (v,) = new_codes("lost")
    through_proxy = make_client(proxy_url, tenant)
    fx.lose_next()  # the service runs the next request; its answer never reaches us
    r = through_proxy.verify(v, verified_by="lossy-network")
    assert r.success, r
    assert r.replayed  # the retry got the stored result of the first, committed, request
    assert r.code_id and r.verified_at is not None

    c = client.get_code(r.code_id)
    assert c.status is True and c.verified_by == "lossy-network" and c.verified_at == r.verified_at
    # The pipeline delivers the verification log: exactly one, and no second one afterwards.
    c = eventually(lambda: client.get_code(r.code_id), lambda c: len(c.verification_logs or []) >= 1)
    time.sleep(0.5)
    c = client.get_code(r.code_id)
    logs = c.verification_logs or []
    assert [log.result for log in logs] == ["success"], logs
    assert logs[0].verified_by == "lossy-network"


def test_lost_response_of_a_reactivate(proxy_url: str, client: Client, fx: Fixtures, tenant: Tenant, new_codes) -> None:
    (v,) = new_codes("lost-reactivate")
    assert client.verify(v).success
    through_proxy = make_client(proxy_url, tenant)
    fx.lose_next()
    r = through_proxy.reactivate(v, reactivated_by="support", reason="refund")
    assert r.success and r.replayed
    assert client.get_code_by_value(v).status is False


def test_same_key_same_body_is_replayed(client: Client, new_codes) -> None:
    (v,) = new_codes("replay")
    key = "order-" + uuid.uuid4().hex
    first = client.verify(v, verified_by="shop", idempotency_key=key)
    second = client.verify(v, verified_by="shop", idempotency_key=key)
    assert first.success and not first.replayed and first.idempotency_key == key
    assert second.success and second.replayed
    assert (second.code_id, second.verified_at, second.message) == (first.code_id, first.verified_at, first.message)
    # A new logical call (new key) sees the code used.
    assert client.verify(v, verified_by="shop").error_code == "CODE_ALREADY_USED"


def test_same_key_different_body_is_409(client: Client, new_codes) -> None:
    a, b = new_codes("conflict-a", "conflict-b")
    key = uuid.uuid4().hex
    assert client.verify(a, idempotency_key=key).success
    with pytest.raises(ConflictError) as ei:
        client.verify(b, idempotency_key=key)
    assert ei.value.status == 409 and ei.value.detail and ei.value.attempts == 1
    with pytest.raises(ConflictError):
        client.verify(a, verified_by="someone else", idempotency_key=key)
    assert client.get_code_by_value(b).status is False  # the conflicting request changed nothing


def test_each_call_gets_its_own_key(client: Client, new_codes) -> None:
    a, b = new_codes("k1", "k2")
    ra, rb = client.verify(a), client.verify(b)
    assert ra.idempotency_key and rb.idempotency_key and ra.idempotency_key != rb.idempotency_key
    assert len(ra.idempotency_key) == 32 and int(ra.idempotency_key, 16) >= 0
