"""Shared fixtures. The live tests run against the service the Go harness starts
(``go test -run TestPythonSDK ./api/sdk/``), which hands over:

- ``ACV_BASE_URL``: the API;
- ``ACV_PROXY_URL``: the same API behind a proxy that can lose the next response;
- ``ACV_FIXTURES_URL``: the operator side (tenants, codes, disabling, revoking, lose-next).

Without them the live tests are skipped and only the offline ones run.
"""

from __future__ import annotations

import os
import uuid
from typing import Callable, List, Optional

import pytest

from acv import Client
from livekit import Fixtures, Tenant, make_client


def _env(name: str) -> str:
    v = os.environ.get(name)
    if not v:
        pytest.skip(f"{name} is not set: run the live suite with `go test -run TestPythonSDK ./api/sdk/`")
    return v


@pytest.fixture(scope="session")
def base_url() -> str:
    return _env("ACV_BASE_URL")


@pytest.fixture(scope="session")
def proxy_url() -> str:
    return _env("ACV_PROXY_URL")


@pytest.fixture(scope="session")
def fx() -> Fixtures:
    return Fixtures(_env("ACV_FIXTURES_URL"))


@pytest.fixture(scope="module")
def tenant(fx: Fixtures) -> Tenant:
    """A fresh project and key for each test module."""
    return fx.tenant()


@pytest.fixture(scope="module")
def client(base_url: str, tenant: Tenant) -> Client:
    return make_client(base_url, tenant)


@pytest.fixture
def new_codes(fx: Fixtures, tenant: Tenant) -> Callable[..., List[str]]:
    """Creates codes in the module's tenant and returns their values, each made unique with a
    random prefix unless ``raw=True``."""

    def make(*suffixes: str, raw: bool = False, expires_at: Optional[int] = None) -> List[str]:
        tag = uuid.uuid4().hex[:8]
        values = list(suffixes) if raw else [f"{tag}-{s}" for s in suffixes]
        fx.codes(tenant, values, expires_at=expires_at)
        return values

    return make
