"""The demo's waiting appeal: `make run` files one on a decided, restricting item.

seed_waiting_appeal(queue) is called by the content-moderation demo (seed_demo) once its queue
has decided items with statements of reasons: it files one appeal through the same service the
API uses, as the demo's platform, so the appeals lane has work to show.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef

from queue_app.api.auth import issue_api_client
from queue_app.models import (
    ApiClient,
    Appeal,
    DecisionStatus,
    Queue,
    StatementKind,
    StatementOfReasons,
)
from queue_app.services import appeals

DEMO_CLIENT = "demo-platform"
DEMO_REFERENCE = "demo-appeal-{decision_id}"
DEMO_TEXT = (
    "I did not post a scam. I quoted the message I received to warn my friends not to answer "
    "it; please read the whole post again."
)


def _demo_client(queue: Queue) -> ApiClient:
    client = ApiClient.objects.filter(name=DEMO_CLIENT).first()
    if client is None:
        client, _ = issue_api_client(name=DEMO_CLIENT, can_intake=True, queues=[queue])
    else:
        client.queues.add(queue)
    return client


def seed_waiting_appeal(queue: Queue) -> Appeal | None:
    """File one appeal on a decided item of the queue whose decision restricts; return it.

    The newest restriction carried out and still standing, with no appeal yet; None when the
    queue has none. While one waits (a second `make run`), that one is returned.
    """
    waiting = Appeal.objects.filter(queue=queue, task__state="open").order_by("-id").first()
    if waiting is not None:
        return waiting
    candidates = (
        StatementOfReasons.objects.filter(
            decision__queue=queue,
            kind=StatementKind.RESTRICTION,
            errors={},
            decision__story__status=DecisionStatus.APPLIED,
        )
        .exclude(Exists(Appeal.objects.filter(decision_id=OuterRef("decision_id"))))
        .order_by("-id")
    )
    statement = candidates.first()
    if statement is None:
        return None
    appeal, _ = appeals.file_appeal(
        client=_demo_client(queue),
        request=appeals.AppealRequest(
            reference=DEMO_REFERENCE.format(decision_id=statement.decision_id),
            text=DEMO_TEXT,
            statement_puid=statement.puid,
        ),
    )
    return appeal
