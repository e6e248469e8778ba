"""Read the queue a reviewer is about to work in, with whether they may review it.

One prepared statement each (db/statements/items.py): compiling the ORM's access join cost more
client CPU than the claim or the decide that follows (bench/web_versions.py).
"""

from __future__ import annotations

from queue_app.db.runner import fetch_prepared_instances
from queue_app.db.statements import items as items_sql
from queue_app.models import Queue


def queue_with_access(*, slug: str, user_id: int) -> Queue | None:
    """Return the queue with that slug, may_review set for the user, or None."""
    params = {"slug": slug, "owner_id": user_id}
    found = fetch_prepared_instances(Queue, items_sql.QUEUE_BY_SLUG_WITH_ACCESS, params)
    return found[0] if found else None


def queue_of_item_with_access(*, item_id: int, user_id: int) -> Queue | None:
    """Return the queue of the item, may_review set for the user, or None (no such item)."""
    params = {"item_id": item_id, "owner_id": user_id}
    found = fetch_prepared_instances(Queue, items_sql.QUEUE_OF_ITEM_WITH_ACCESS, params)
    return found[0] if found else None
