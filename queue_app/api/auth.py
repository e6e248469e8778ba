"""API client tokens: issued once, stored as sha256, checked per request with scope and queue.

A token is ``rc_`` followed by 43 URL-safe random characters (256 bits). Only its sha256 is
stored, so a database leak does not leak working tokens; the plain token is shown once.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from queue_app.api.failures import ApiProblem
from queue_app.errors import ItemNotFound, NotPermitted
from queue_app.models import ApiClient, ApiScope, Queue, ReviewItem

TOKEN_PREFIX = "rc_"
# last_used_at is for people ("is this client still in use?"), not an audit trail: writing it
# at most once a minute keeps a busy worker from turning every read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_token(token: str) -> str:
    """Return the sha256 hex digest stored for a token."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_token() -> str:
    """Return a fresh random token (shown once, never stored)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_fields(token: str) -> tuple[str, str]:
    """Return (token_prefix, token_hash): what is stored of a token."""
    return token[:10], hash_token(token)


def service_username(client_name: str) -> str:
    """Return the username of the service user an API client named so acts as."""
    return f"api:{client_name}"[:150]


def service_username_taken(client_name: str) -> bool:
    """Return whether that service username already belongs to someone."""
    return get_user_model().objects.filter(username=service_username(client_name)).exists()


def new_service_user(client_name: str) -> User:
    """Create the user an API client acts as: owns its leases and decisions, cannot log in."""
    user = get_user_model().objects.create_user(username=service_username(client_name))
    user.set_unusable_password()
    user.save(update_fields=["password"])
    return user


def issue_api_client(
    *,
    name: str,
    can_intake: bool = False,
    can_adjudicate: bool = False,
    queues: list[Queue] | None = None,
    created_by: User | None = None,
) -> tuple[ApiClient, str]:
    """Create a client with its own service user; return (client, plain token shown once)."""
    token = new_token()
    prefix, digest = token_fields(token)
    with transaction.atomic():
        client = ApiClient.objects.create(
            name=name,
            user=new_service_user(name),
            token_prefix=prefix,
            token_hash=digest,
            can_intake=can_intake,
            can_adjudicate=can_adjudicate,
            created_by=created_by,
        )
        if queues:
            client.queues.set(queues)
    return client, token


def revoke_api_client(*, client: ApiClient) -> None:
    """Revoke a client: its token stops working at once and its queue access lapses."""
    ApiClient.objects.filter(pk=client.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )


class ApiTokenAuth(HttpBearer):
    """Authorization: Bearer <token> → the ApiClient (unrevoked, with an active user)."""

    def authenticate(self, request: HttpRequest, token: str) -> ApiClient | None:
        if not token.startswith(TOKEN_PREFIX):
            return None
        client = (
            ApiClient.objects.select_related("user")
            .filter(token_hash=hash_token(token), revoked_at__isnull=True, user__is_active=True)
            .first()
        )
        if client is None:
            return None
        now = timezone.now()
        if client.last_used_at is None or now - client.last_used_at > LAST_USED_RESOLUTION:
            ApiClient.objects.filter(pk=client.pk).update(last_used_at=now)
        return client


def require_scope(client: ApiClient, scope: ApiScope) -> None:
    """Refuse (403) a client without the scope the endpoint needs."""
    allowed = client.can_intake if scope == ApiScope.INTAKE else client.can_adjudicate
    if not allowed:
        raise NotPermitted(f"This API client does not have the {scope.value} scope.")


def find_queue(client: ApiClient, slug: str) -> Queue | None:
    """Return the queue named by slug (None if there is none), knowing whether it is granted."""
    # One round trip for both questions: every lease and intake request asks them.
    grant = ApiClient.queues.through.objects.filter(apiclient_id=client.pk, queue_id=OuterRef("pk"))
    return Queue.objects.filter(slug=slug).annotate(granted=Exists(grant)).first()


def require_queue(client: ApiClient, queue: Queue) -> None:
    """Refuse (403) a client not granted this queue."""
    granted = getattr(queue, "granted", None)
    if granted is None:
        granted = client.queues.filter(pk=queue.pk).exists()
    if not granted:
        raise NotPermitted(f"This API client may not use the queue {queue.slug!r}.")


def client_of(request: HttpRequest) -> ApiClient:
    """Return the authenticated client of an API request."""
    return request.auth  # type: ignore[attr-defined]  # set by ninja


def visible_item(client: ApiClient, item_id: int) -> ReviewItem:
    """Return the item if it is in one of the client's queues; ItemNotFound otherwise."""
    # An item in a queue the client is not granted does not exist, as far as it can tell.
    item = (
        ReviewItem.objects.select_related("queue")
        .filter(pk=item_id, queue__api_clients=client)
        .first()
    )
    if item is None:
        raise ItemNotFound()
    return item


def granted_queue(client: ApiClient, slug: str) -> Queue:
    """Return the queue named by slug: 404 if there is none, 403 if not granted."""
    queue = find_queue(client, slug)
    if queue is None:
        raise ApiProblem(404, "not_found", f"No queue named {slug!r}.")
    require_queue(client, queue)
    return queue
