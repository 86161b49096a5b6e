"""Offline: the signing scheme against vectors computed with the service's own Go
implementation (api/contract StringToSign and Sign)."""

from __future__ import annotations

import re

from acv import signing
from acv.codegate import EMPTY_STRING_HASH, generate_signature

SECRET = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"


def test_get_vector_matches_the_service() -> None:
    # contract.StringToSign("GET", "/api/v1/projects/p1/codes",
    #   "status=used&search=a%20b%2Bc%25d%26e%3Df%21%27%28%29%2A%C3%A9&page=2", empty, "1700000000", "")
    query = signing.build_query([("status", "used"), ("search", "a b+c%d&e=f!'()*é"), ("page", "2")])
    assert query == "page=2&search=a%20b%2Bc%25d%26e%3Df%21%27%28%29%2A%C3%A9&status=used"
    sts = signing.string_to_sign(
        "get",
        "/api/v1/projects/p1/codes",
        "status=used&search=a%20b%2Bc%25d%26e%3Df%21%27%28%29%2A%C3%A9&page=2",
        signing.body_sha256(None),
        "1700000000",
    )
    assert sts == (
        "GET\n/api/v1/projects/p1/codes\n"
        "page=2&search=a%20b%2Bc%25d%26e%3Df%21%27%28%29%2A%C3%A9&status=used\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n1700000000"
    )
    assert signing.sign(SECRET, sts) == "36bc29d3fc40b19c037516d79eb643c5bcc617d7b9471120ac977ccb89fc39e5"


def test_post_vector_with_nonce_matches_the_service() -> None:
    body = '{"code":"ABC é","verified_by":"me"}'.encode("utf-8")
    sts = signing.string_to_sign(
        "POST", "/api/v1/projects/p1/codes/verify", "", signing.body_sha256(body), "1700000001", "nonce_0123456789-abc"
    )
    assert sts.count("\n") == 5
    assert signing.sign(SECRET, sts) == "9baff0b3fe5de818601d9dc7dbe20b8258d1dc005c55f0dba3e617c3f63a91aa"


def test_query_is_sent_sorted_so_the_signed_bytes_are_the_sent_bytes() -> None:
    q = signing.build_query([("z", "1"), ("a", "x y"), ("m", "")])
    assert q == "a=x%20y&m=&z=1"
    assert signing.canonical_query(q) == q


def test_path_segments_encode_everything_but_unreserved() -> None:
    assert signing.encode_path_segment("A/B C+é") == "A%2FB%20C%2B%C3%A9"
    assert signing.encode_path_segment("..") == "%2E%2E"
    assert signing.encode_path_segment("a.b~c_d-e") == "a.b~c_d-e"


def test_nonce_shape() -> None:
    seen = set()
    for _ in range(200):
        n = signing.new_nonce()
        assert re.fullmatch(r"[A-Za-z0-9_-]{16,64}", n), n
        seen.add(n)
    assert len(seen) == 200


def test_codegate_generate_signature_is_the_original_form() -> None:
    # The original SDK's form: urlencode (quote_plus) of the sorted pairs, five lines.
    sig = generate_signature(
        "GET", "/api/v1/projects/p1/codes", {"status": "used", "search": "a b!", "page": "1"},
        None, 1700000000, SECRET,
    )
    sts = "GET\n/api/v1/projects/p1/codes\npage=1&search=a+b%21&status=used\n" + EMPTY_STRING_HASH + "\n1700000000"
    assert sig == signing.sign(SECRET, sts)
