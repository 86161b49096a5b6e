"""Helpers of the live tests: the Go harness's fixtures endpoint, clients, polling."""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Optional, TypeVar

from acv import Client

T = TypeVar("T")


@dataclass(frozen=True)
class Tenant:
    project_id: str
    key_id: str
    secret: str


class Fixtures:
    """The fixtures endpoint of the Go harness (api/sdk/fixtures_test.go)."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def _post(self, path: str, payload: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        req = urllib.request.Request(
            self.url + path,
            data=json.dumps(payload).encode("utf-8"),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read()
        return json.loads(body) if body else None

    def tenant(self, expires_at: Optional[int] = None) -> Tenant:
        d = self._post("/tenant", {"expires_at": expires_at})
        assert d is not None
        return Tenant(project_id=d["project_id"], key_id=d["key_id"], secret=d["secret"])

    def codes(self, tenant: Tenant, values: Iterable[str], expires_at: Optional[int] = None) -> None:
        self._post("/codes", {"project_id": tenant.project_id, "values": list(values), "expires_at": expires_at})

    def set_project_enabled(self, tenant: Tenant, enabled: bool) -> None:
        self._post("/project", {"project_id": tenant.project_id, "enabled": enabled})

    def set_code_disabled(self, tenant: Tenant, value: str, disabled: bool) -> None:
        self._post("/code", {"project_id": tenant.project_id, "value": value, "disabled": disabled})

    def revoke(self, tenant: Tenant) -> None:
        self._post("/revoke", {"key_id": tenant.key_id})

    def lose_next(self) -> None:
        self._post("/lose-next", {})


def make_client(url: str, t: Tenant, **kw: Any) -> Client:
    kw.setdefault("timeout", 10.0)
    kw.setdefault("retries", 3)
    kw.setdefault("backoff", 0.05)
    return Client(url, t.key_id, t.secret, t.project_id, **kw)


def eventually(fn: Callable[[], T], ok: Callable[[T], bool], timeout: float = 10.0, every: float = 0.05) -> T:
    """Calls fn until ok(result) or the timeout; returns the last result (the caller asserts)."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if ok(v) or time.monotonic() >= deadline:
            return v
        time.sleep(every)
