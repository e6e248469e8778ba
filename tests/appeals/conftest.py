"""A content-moderation queue with a decided, restricting post, its statement, and a platform
that forwards its users' appeals through the API."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from queue_app.apply import apply_batch
from queue_app.models import ApiClient, Appeal, Decision, Queue, ReasonCode, StatementOfReasons
from queue_app.services import appeals
from tests.api.conftest import Caller, caller_for, make_client
from tests.conftest import _user, with_overturn_permission
from tests.delivery.conftest import (  # noqa: F401 (fixtures)
    Platform,
    notifying_posts,
    platform,
    standin,
)
from tests.statements.conftest import carol, decide, posts  # noqa: F401 (fixtures)


@pytest.fixture
def dave(reviewers_group: Group) -> User:
    """A second person who may overturn and took no part in any decision: decides appeals."""
    return with_overturn_permission(_user("dave", reviewers_group))


@pytest.fixture
def erin(reviewers_group: Group) -> User:
    """Another person who may overturn."""
    return with_overturn_permission(_user("erin", reviewers_group))


@pytest.fixture
def forwarder(posts: Queue) -> tuple[ApiClient, str]:  # noqa: F811
    """The platform's API client: intake scope on the posts queue."""
    return make_client("platform", [posts], adjudicate=False)


@pytest.fixture
def api(forwarder: tuple[ApiClient, str]) -> Caller:
    return caller_for(forwarder[1])


def restricted(queue: Queue, reviewer: User, **options: Any) -> StatementOfReasons:
    """Decide a post (rejected: removed) and apply it: its statement of reasons."""
    decision = decide(queue, reviewer, note="Asked for a bank password", **options)
    while apply_batch():
        pass
    return StatementOfReasons.objects.get(decision=decision)


def appeal_body(statement: StatementOfReasons | None = None, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "reference": "complaint-1",
        "text": "I never asked anyone for a password; that was a quote from a scam warning.",
        **fields,
    }
    if statement is not None and "decision" not in fields and "statement" not in fields:
        body["statement"] = statement.puid
    return body


def file(client: ApiClient, statement: StatementOfReasons, reference: str = "c-1") -> Appeal:
    appeal, created = appeals.file_appeal(
        client=client,
        request=appeals.AppealRequest(
            reference=reference,
            text="Please look again: the post warned others about this scam.",
            statement_puid=statement.puid,
        ),
    )
    assert created
    return appeal


def overturn_reason(queue: Queue) -> ReasonCode:
    return ReasonCode.objects.get(queue=queue, verdict="overturn", code="reviewer_error")


def decision_of(statement: StatementOfReasons) -> Decision:
    return Decision.objects.get(pk=statement.decision_id)
