"""Python client of the acv activation-code verification service.

>>> from acv import Client
>>> client = Client("https://acv.example.com", api_key, api_secret, project_id)
>>> result = client.verify("ABC-123", verified_by="order-42")
>>> result.success, result.error_code, result.replayed

Users of the original CodeGate SDK switch with one import: ``from acv.codegate import
CodeGateClient`` (see :mod:`acv.codegate`).
"""

from ._version import __version__
from .client import RETRY_STATUSES, Client
from .errors import (
    AcvError,
    ApiError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    TransportError,
)
from .models import (
    Code,
    CodePage,
    Project,
    ProjectStatistics,
    ReactivateResult,
    RecentVerification,
    Statistics,
    VerificationLog,
    VerifyResult,
)

__all__ = [
    "__version__",
    "Client",
    "RETRY_STATUSES",
    # results
    "Code",
    "CodePage",
    "Project",
    "ProjectStatistics",
    "ReactivateResult",
    "RecentVerification",
    "Statistics",
    "VerificationLog",
    "VerifyResult",
    # errors
    "AcvError",
    "ApiError",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "ServerError",
    "TransportError",
]
