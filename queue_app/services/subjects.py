"""The subject's history: the other items about the same customer, account or merchant."""

from __future__ import annotations

from typing import Any

from queue_app.models import ReviewItem
from queue_app.services._common import User
from queue_app.services.blindness import blinded_item_ids
from reviewconsole.routers import read_alias

SUBJECT_HISTORY_LIMIT = 20

# What a subject row may say of its item's decisions (items_sql.SUBJECT_HISTORY's standing decision;
# names a row does not have are set to None harmlessly).
BLINDED_COLUMNS = (
    "verdict",
    "reason_code",
    "reason_label",
    "reviewer",
    "decided_on",
    "standing_outcome",
    "status",
    "note",
)


def subject_history(
    *, subject_key: str | None, user: User, exclude_id: int = 0, limit: int = SUBJECT_HISTORY_LIMIT
) -> list[dict[str, Any]]:
    """Return the subject's items in queues the user may review, newest first, at most limit.

    Items in any other queue are never returned, not even counted: the access rule is the
    claim's own (access_sql._MAY_READ: any scope will do for an API client), applied in the one
    indexed query (items_sql.SUBJECT_HISTORY).
    """
    if not subject_key or not user.is_authenticated or not user.is_active:
        return []
    rows = ReviewItem.objects.subject_history(
        subject_key=subject_key,
        exclude_id=exclude_id,
        user_id=user.pk,
        limit=limit,
        # The replica inside replica_reads() (the API's list: queue_app/api/replica_reads.py);
        # the primary everywhere else, the console's item page included.
        using=read_alias(),
    )
    # Blind QA (services/blindness.py): an item whose QA review the user holds is listed
    # without its outcome, as if undecided. Asked of the primary even here: a QA lease taken
    # a moment ago must blind at once.
    blinded = blinded_item_ids(user=user) if rows else frozenset()
    for row in rows:
        if row["id"] in blinded:
            row.update(dict.fromkeys(BLINDED_COLUMNS))
    return rows
