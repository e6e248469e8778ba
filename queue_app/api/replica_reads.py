"""The API's reads that tolerate a bounded staleness, and the one header that says where each
came from.

Two endpoints only read and are read the most by upstream systems that poll: a subject's item
list (`GET /items?subject_key=`) and an item's state (`GET /items/{id}`). With a replica
configured (DATABASE_REPLICA_URL) they read from it while it is up and its replay is no further
behind than REVIEW_API_REPLICA_MAX_LAG_SECONDS (5 s by default), and from the primary
otherwise. Nothing else does: a lease, a decision, a release, a hold, intake and evidence
replacement read their own writes (and the rows they lock) on the primary.

Always on the primary, also for these two: the token (so a revoked client is refused at once:
ApiTokenAuth runs before the view, outside the block) and the blind-QA rule
(services/blindness.py). On the replica: the item, its decisions, its outcome and the subject
list, with the queue grants they are filtered by (a grant withdrawn reaches these reads when the
replica has replayed it, within the bound).

A client that must see its own write at once asks for the primary with the request header
`X-Review-Read-From: primary`. Every response of these endpoints says where it read from in the
same header (`replica` or `primary`). An item the replica does not have yet (created a moment
ago) is looked up again on the primary, so a client's own new item is never a 404; a replica
that fails in the middle of a read (stopped, or the read cancelled by recovery) is passed over
the same way. Both read only, so reading again is safe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

from django.conf import settings
from django.db import DatabaseError, connections
from django.http import HttpRequest, HttpResponse

from queue_app.api.failures import ApiProblem
from queue_app.errors import ItemNotFound
from reviewconsole.routers import REPLICA, reads_on, replica_alias

READ_FROM_HEADER = "X-Review-Read-From"
PRIMARY, FROM_REPLICA = "primary", "replica"
_ATTRIBUTE = "review_read_from"

T = TypeVar("T")
logger = logging.getLogger(__name__)


def asks_for_primary(request: HttpRequest) -> bool:
    """Whether the request's X-Review-Read-From asks for the primary; 422 for any other value
    than `primary` or `replica` (or none)."""
    value = request.headers.get(READ_FROM_HEADER, "").strip().lower()
    if value in ("", FROM_REPLICA):
        return False
    if value == PRIMARY:
        return True
    raise ApiProblem(
        422,
        "invalid_read_from",
        f"{READ_FROM_HEADER} may be {PRIMARY!r} or {FROM_REPLICA!r}, not {value[:40]!r}.",
        {"header": READ_FROM_HEADER, "allowed": [PRIMARY, FROM_REPLICA]},
    )


def lag_tolerant(request: HttpRequest, read: Callable[[], T]) -> T:
    """Run read (which only reads) on the replica if the client allows it and the replica is
    fit (up, within REVIEW_API_REPLICA_MAX_LAG_SECONDS); else, or if the replica does not have
    the item yet or fails, on the primary. Records which for the response header."""
    if not asks_for_primary(request):
        alias = replica_alias(settings.REVIEW_API_REPLICA_MAX_LAG_SECONDS)
        if alias == REPLICA:
            try:
                with reads_on(REPLICA):
                    result = read()
            except ItemNotFound:
                pass  # perhaps too new for the replica: the primary has the last word
            except DatabaseError as exc:
                with suppress(DatabaseError):
                    connections[REPLICA].close()
                logger.warning(
                    "replica failed during an API read; reading from the primary",
                    extra={"error": " ".join(str(exc).split())[:300]},
                )
            else:
                setattr(request, _ATTRIBUTE, FROM_REPLICA)
                return result
    setattr(request, _ATTRIBUTE, PRIMARY)
    return read()


def says_where_it_read(run: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Operation decorator (ninja's decorate_view): put X-Review-Read-From on the response,
    errors included, once the view has chosen where to read."""

    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = run(request, *args, **kwargs)
        read_from = getattr(request, _ATTRIBUTE, None)
        if read_from is not None:
            response[READ_FROM_HEADER] = read_from
        return response

    return wrapper
