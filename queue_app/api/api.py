"""The JSON API under /api/v1/: intake for upstream systems, batch leases for adjudicators.

django-ninja, because the pydantic schemas that validate each request are also what the OpenAPI
document (/api/v1/openapi.json, readable at /api/v1/docs, docs.py) is generated from: the published
contract cannot drift from the code. Endpoints (intake_endpoints.py, adjudication.py) only
authenticate, check scope and queue, and call queue_app.services. Numbers are exact end to end
(wire.py); every failure leaves in one JSON shape (failures.py).
"""

from __future__ import annotations

from ninja import NinjaAPI
from ninja.operation import Operation

from queue_app.api import adjudication, appeal_endpoints, attachment_endpoints, intake_endpoints
from queue_app.api.auth import ApiTokenAuth
from queue_app.api.docs import ReadableDocs
from queue_app.api.failures import install_error_handlers
from queue_app.api.schemas import MAX_BODY_BYTES
from queue_app.api.wire import ExactParser, ExactRenderer


class ReviewConsoleAPI(NinjaAPI):
    def get_openapi_operation_id(self, operation: Operation) -> str:
        # Short, stable ids (create_item, lease_batch, ...) for generated clients.
        return operation.view_func.__name__


api = ReviewConsoleAPI(
    title="Review Console API",
    version="1",
    description=(
        "Intake of review items with idempotency keys, and batch leases for automated "
        "adjudicators, fenced by lease tokens exactly as reviewers are. Authenticate with "
        "`Authorization: Bearer <token>` (API clients are created in Django admin). Request "
        f"bodies are limited to {MAX_BODY_BYTES} bytes (413 beyond). Every error has the shape "
        '`{"error": {"code", "message", "details"}}`.'
    ),
    auth=ApiTokenAuth(),
    parser=ExactParser(),
    renderer=ExactRenderer(),
    urls_namespace="api",
    docs=ReadableDocs(),
)
install_error_handlers(api)
api.add_router("", intake_endpoints.router)
api.add_router("", adjudication.router)
api.add_router("", attachment_endpoints.router)
api.add_router("", appeal_endpoints.router)
