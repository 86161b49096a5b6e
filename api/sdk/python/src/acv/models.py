"""The service's resources as dataclasses. Field names are the contract's JSON names; every
timestamp is an integer of Unix seconds (UTC). Unknown fields in an answer are ignored, so a
newer service stays readable."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Mapping, Optional

__all__ = [
    "Code",
    "CodePage",
    "Project",
    "ProjectStatistics",
    "ReactivateResult",
    "RecentVerification",
    "Statistics",
    "VerificationLog",
    "VerifyResult",
]


def _opt_int(v: Any) -> Optional[int]:
    return None if v is None else int(v)


def _opt_str(v: Any) -> Optional[str]:
    return None if v is None else str(v)


@dataclass(frozen=True)
class Statistics:
    """A project's codes counted by derived state; the four states are disjoint, so
    ``total_codes == used_codes + unused_codes + disabled_codes + expired_codes``."""

    total_codes: int
    used_codes: int
    unused_codes: int
    disabled_codes: int
    expired_codes: int

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Statistics":
        return cls(
            total_codes=int(d.get("total_codes", 0)),
            used_codes=int(d.get("used_codes", 0)),
            unused_codes=int(d.get("unused_codes", 0)),
            disabled_codes=int(d.get("disabled_codes", 0)),
            expired_codes=int(d.get("expired_codes", 0)),
        )


@dataclass(frozen=True)
class Project:
    """``status`` is True when the project is enabled. A project whose ``expires_at`` has
    passed is expired, not disabled."""

    id: str
    name: str
    description: str
    status: bool
    expires_at: Optional[int]
    created_at: int
    statistics: Optional[Statistics] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Project":
        stats = d.get("statistics")
        return cls(
            id=str(d["id"]),
            name=str(d.get("name") or ""),
            description=str(d.get("description") or ""),
            status=bool(d.get("status")),
            expires_at=_opt_int(d.get("expires_at")),
            created_at=int(d.get("created_at", 0)),
            statistics=Statistics.from_json(stats) if isinstance(stats, Mapping) else None,
        )


@dataclass(frozen=True)
class RecentVerification:
    """One code currently used, as the statistics endpoint lists it."""

    code: str
    verified_at: int
    verified_by: Optional[str]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "RecentVerification":
        return cls(
            code=str(d["code"]),
            verified_at=int(d.get("verified_at", 0)),
            verified_by=_opt_str(d.get("verified_by")),
        )


@dataclass(frozen=True)
class ProjectStatistics:
    """The body of ``GET /api/v1/projects/{project_id}/statistics``: the state counts,
    ``usage_rate`` (used / total, 4 decimals, 0 without codes) and up to 10 codes currently used,
    newest ``verified_at`` first. It may trail acknowledged verifies by the audit pipeline's
    lag."""

    project_id: str
    total_codes: int
    used_codes: int
    unused_codes: int
    disabled_codes: int
    expired_codes: int
    usage_rate: float
    recent_verifications: List[RecentVerification] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "ProjectStatistics":
        return cls(
            project_id=str(d.get("project_id") or ""),
            **asdict(Statistics.from_json(d)),  # the counts, side by side with the rest
            usage_rate=float(d.get("usage_rate", 0)),
            recent_verifications=[
                RecentVerification.from_json(r) for r in (d.get("recent_verifications") or [])
            ],
        )


@dataclass(frozen=True)
class VerificationLog:
    """One verify or reactivate attempt on a code. ``result`` is ``success`` (verified),
    ``reactivated`` or ``failed``; ``verified_by`` holds the verifier or the reactivator.
    ``action`` (``verify`` / ``reactivate``) and ``reason`` (the error code of a failure, the
    caller's reason of a reactivation) are the service's extensions: None from a server
    without them."""

    id: str
    verified_at: int
    verified_by: Optional[str]
    ip_address: str
    result: str
    action: Optional[str] = None
    reason: Optional[str] = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "VerificationLog":
        return cls(
            id=str(d["id"]),
            verified_at=int(d.get("verified_at", 0)),
            verified_by=_opt_str(d.get("verified_by")),
            ip_address=str(d.get("ip_address") or ""),
            result=str(d.get("result") or ""),
            action=_opt_str(d.get("action")),
            reason=_opt_str(d.get("reason")),
        )


@dataclass(frozen=True)
class Code:
    """An activation code. ``status`` is True when the code is used (verified);
    ``verification_logs`` is a list only from the single-code reads (by id, by value) and None
    in a list page."""

    id: str
    code: str
    status: bool
    is_disabled: bool
    is_expired: bool
    expires_at: Optional[int]
    verified_at: Optional[int]
    verified_by: Optional[str]
    created_at: int
    verification_logs: Optional[List[VerificationLog]] = None

    @property
    def state(self) -> str:
        """The derived state: ``disabled``, ``used``, ``expired`` or ``unused``."""
        if self.is_disabled:
            return "disabled"
        if self.verified_at is not None:
            return "used"
        if self.is_expired:
            return "expired"
        return "unused"

    @classmethod
    def from_json(cls, d: Mapping[str, Any], *, with_logs: bool = False) -> "Code":
        logs = d.get("verification_logs")
        parsed: Optional[List[VerificationLog]] = None
        if isinstance(logs, list):
            parsed = [VerificationLog.from_json(x) for x in logs]
        elif with_logs:
            parsed = []
        return cls(
            id=str(d["id"]),
            code=str(d["code"]),
            status=bool(d.get("status")),
            is_disabled=bool(d.get("is_disabled")),
            is_expired=bool(d.get("is_expired")),
            expires_at=_opt_int(d.get("expires_at")),
            verified_at=_opt_int(d.get("verified_at")),
            verified_by=_opt_str(d.get("verified_by")),
            created_at=int(d.get("created_at", 0)),
            verification_logs=parsed,
        )


@dataclass(frozen=True)
class CodePage:
    """One page of the code list, newest first. A page past the end has no items and the
    right ``total`` and ``total_pages``."""

    items: List[Code]
    total: int
    page: int
    page_size: int
    total_pages: int

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "CodePage":
        return cls(
            items=[Code.from_json(x) for x in (d.get("items") or [])],
            total=int(d.get("total", 0)),
            page=int(d.get("page", 0)),
            page_size=int(d.get("page_size", 0)),
            total_pages=int(d.get("total_pages", 0)),
        )


def _operation_fields(
    d: Mapping[str, Any], at: str, replayed: bool, idempotency_key: Optional[str]
) -> Dict[str, Any]:
    """The fields of a verify or reactivate answer, shared by :class:`VerifyResult` and
    :class:`ReactivateResult` so the two cannot drift apart; ``at`` names the one field they
    differ in (``verified_at`` / ``reactivated_at``)."""
    return {
        "success": bool(d.get("success")),
        "code_id": _opt_str(d.get("code_id")),
        "code": str(d.get("code") or ""),
        at: _opt_int(d.get(at)),
        "message": str(d.get("message") or ""),
        "error_code": _opt_str(d.get("error_code")),
        "replayed": replayed,
        "idempotency_key": idempotency_key,
    }


@dataclass(frozen=True)
class VerifyResult:
    """The outcome of a verify. ``success`` False is a business refusal, ``error_code`` says
    why (``CODE_NOT_FOUND``, ``PROJECT_DISABLED``, ``CODE_DISABLED``, ``CODE_ALREADY_USED``,
    ``CODE_EXPIRED``, ``PROJECT_EXPIRED``). ``replayed`` is True when the service answered from
    the stored result of an earlier request with the same ``idempotency_key`` (the header
    ``Idempotent-Replayed: true``): the code was verified once, by that earlier request."""

    success: bool
    code_id: Optional[str]
    code: str
    verified_at: Optional[int]
    message: str
    error_code: Optional[str]
    replayed: bool = False
    idempotency_key: Optional[str] = None

    @classmethod
    def from_json(
        cls, d: Mapping[str, Any], *, replayed: bool = False, idempotency_key: Optional[str] = None
    ) -> "VerifyResult":
        return cls(**_operation_fields(d, "verified_at", replayed, idempotency_key))


@dataclass(frozen=True)
class ReactivateResult:
    """The outcome of a reactivate; see :class:`VerifyResult`. Refusals: ``CODE_NOT_FOUND``,
    ``PROJECT_DISABLED``, ``CODE_DISABLED``, ``CODE_ALREADY_UNUSED``, ``CODE_EXPIRED``,
    ``PROJECT_EXPIRED``."""

    success: bool
    code_id: Optional[str]
    code: str
    reactivated_at: Optional[int]
    message: str
    error_code: Optional[str]
    replayed: bool = False
    idempotency_key: Optional[str] = None

    @classmethod
    def from_json(
        cls, d: Mapping[str, Any], *, replayed: bool = False, idempotency_key: Optional[str] = None
    ) -> "ReactivateResult":
        return cls(**_operation_fields(d, "reactivated_at", replayed, idempotency_key))

