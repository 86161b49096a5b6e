"""Live: project, statistics, list (filters, pagination, searches that need encoding) and
single-code reads, against the real service."""

from __future__ import annotations

import math
import time
import uuid
from typing import Dict, List

import pytest

from acv import BadRequestError, Client, NotFoundError
from livekit import Fixtures, Tenant, eventually, make_client


def test_project(client: Client, tenant: Tenant, new_codes) -> None:
    new_codes("p1", "p2")
    p = client.get_project()
    assert p.id == tenant.project_id
    assert p.status is True and p.expires_at is None
    assert isinstance(p.name, str) and isinstance(p.description, str)
    assert abs(p.created_at - time.time()) < 3600
    p = eventually(client.get_project, lambda p: p.statistics is not None and p.statistics.total_codes >= 2)
    s = p.statistics
    assert s is not None and s.total_codes >= 2
    assert s.total_codes == s.used_codes + s.unused_codes + s.disabled_codes + s.expired_codes


def test_statistics(client: Client, tenant: Tenant, new_codes) -> None:
    a, _ = new_codes("s1", "s2")
    r = client.verify(a, verified_by="stats-test")
    assert r.success
    st = eventually(client.get_statistics, lambda s: any(v.code == a for v in s.recent_verifications))
    assert st.project_id == tenant.project_id
    mine = [v for v in st.recent_verifications if v.code == a]
    assert mine, st
    assert mine[0].verified_by == "stats-test" and mine[0].verified_at == r.verified_at
    assert st.total_codes == st.used_codes + st.unused_codes + st.disabled_codes + st.expired_codes
    assert st.used_codes >= 1
    assert abs(st.usage_rate - st.used_codes / st.total_codes) <= 0.00005 + 1e-9  # 4 decimals
    assert len(st.recent_verifications) <= 10
    times = [v.verified_at for v in st.recent_verifications]
    assert times == sorted(times, reverse=True)


# ----- list and search, in a tenant of their own so every expectation is exact ------------

SEARCH_CODES = [
    "K1 a b",
    "K2 a+b",
    "K3 50%",
    "K4 x&y=z",
    "K5 !'()*",
    "K6 é漢😀",
    "K7 under_score",
    "K8 it's é + 100% & more",
]

SEARCHES = [
    ("a b", ["K1 a b"]),
    ("a+b", ["K2 a+b"]),
    ("50%", ["K3 50%"]),
    ("%", ["K3 50%", "K8 it's é + 100% & more"]),
    ("x&y=z", ["K4 x&y=z"]),
    ("&", ["K4 x&y=z", "K8 it's é + 100% & more"]),
    ("=", ["K4 x&y=z"]),
    ("!'()*", ["K5 !'()*"]),
    ("'", ["K5 !'()*", "K8 it's é + 100% & more"]),
    ("é漢😀", ["K6 é漢😀"]),
    ("é", ["K6 é漢😀", "K8 it's é + 100% & more"]),
    ("_", ["K7 under_score"]),
    ("UNDER_S", ["K7 under_score"]),
    (" + 100% & ", ["K8 it's é + 100% & more"]),
    ("k", SEARCH_CODES),
    ("a%20b", []),  # sent as a%2520b: no double decoding
    ("%2B", []),
]


@pytest.fixture(scope="module")
def search_tenant(fx: Fixtures) -> Tenant:
    t = fx.tenant()
    fx.codes(t, SEARCH_CODES)
    return t


@pytest.fixture(scope="module")
def search_client(base_url: str, search_tenant: Tenant) -> Client:
    return make_client(base_url, search_tenant)


@pytest.mark.parametrize("search,want", SEARCHES, ids=[repr(s) for s, _ in SEARCHES])
def test_search_needing_encoding_authenticates_and_finds_the_right_codes(
    search_client: Client, search: str, want: List[str]
) -> None:
    page = search_client.list_codes(search=search, page_size=100)
    assert sorted(c.code for c in page.items) == sorted(want)
    assert page.total == len(want)
    assert all(c.verification_logs is None for c in page.items)


def test_list_status_filters_and_pages(search_client: Client) -> None:
    page = search_client.list_codes()
    assert page.page == 1 and page.page_size == 20 and page.total == len(SEARCH_CODES)
    assert search_client.list_codes(status="all").total == len(SEARCH_CODES)
    assert search_client.list_codes(status="disabled").total == 0

    seen: List[str] = []
    for n in (1, 2, 3):
        p = search_client.list_codes(page=n, page_size=3)
        assert p.total == len(SEARCH_CODES) and p.total_pages == math.ceil(len(SEARCH_CODES) / 3)
        keys = [(c.created_at, c.id) for c in p.items]
        assert keys == sorted(keys, reverse=True)  # newest first
        seen += [c.code for c in p.items]
    assert sorted(seen) == sorted(SEARCH_CODES)
    past = search_client.list_codes(page=4, page_size=3)
    assert past.items == [] and past.total == len(SEARCH_CODES) and past.total_pages == 3
    assert [c.code for c in search_client.iter_codes(page_size=3)] == seen


def test_list_filter_by_state_follows_a_verify(search_client: Client) -> None:
    assert search_client.verify("K3 50%").success
    used = eventually(lambda: search_client.list_codes(status="used"), lambda p: p.total == 1)
    assert [c.code for c in used.items] == ["K3 50%"]
    assert used.items[0].status is True and used.items[0].state == "used"
    unused = search_client.list_codes(status="unused", search="%")
    assert [c.code for c in unused.items] == ["K8 it's é + 100% & more"]


@pytest.mark.parametrize("kwargs", [{"page": 0}, {"page_size": 0}, {"page_size": 101}, {"status": "bogus"}])
def test_list_bad_query_is_400(search_client: Client, kwargs: Dict[str, object]) -> None:
    with pytest.raises(BadRequestError) as ei:
        search_client.list_codes(**kwargs)  # type: ignore[arg-type]
    assert ei.value.status == 400 and ei.value.detail


# ----- single-code reads ---------------------------------------------------------------------


def test_get_by_id_and_by_value(client: Client, new_codes) -> None:
    values = new_codes("a/b c", "é/ü 漢", "x+y", "x y", "50%25?#;", ".")
    ids = set()
    for v in values:
        by_value = client.get_code_by_value(v)
        assert by_value.code == v
        by_id = client.get_code(by_value.id)
        assert by_id == by_value
        assert by_value.verification_logs == []
        assert by_value.state == "unused" and by_value.status is False
        assert by_value.verified_at is None and by_value.verified_by is None
        ids.add(by_value.id)
    assert len(ids) == len(values)  # "x+y" and "x y" are two codes


def test_dot_segments_are_values_too(client: Client, new_codes) -> None:
    for v in new_codes(".", "..", raw=True):
        assert client.get_code_by_value(v).code == v


def test_unknown_code_is_404(client: Client) -> None:
    with pytest.raises(NotFoundError) as ei:
        client.get_code("0" * 32)
    assert ei.value.status == 404 and ei.value.detail
    with pytest.raises(NotFoundError):
        client.get_code_by_value("no such code " + uuid.uuid4().hex)
