"""A 422 from the Transparency Database itself (the stand-in's, not the local check's): a dead
job whose error an operator reads in the admin and on /ops/, and that a retry delivers once what
the database was refusing is fixed."""

from __future__ import annotations

import re
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from queue_app import delivery
from queue_app.models import DeliveryChannel, StatementDelivery, StatementKind, StatementOfReasons
from queue_app.services.statements import canonical_json, statement_sha256
from queue_app.transparency import contract
from queue_app.transparency import standin as standin_module
from tests.conftest import with_permission
from tests.delivery.conftest import built, decide, make_due

pytestmark = pytest.mark.django_db

TDB = DeliveryChannel.TRANSPARENCY_DATABASE


@pytest.fixture
def operator(db) -> User:
    """Staff who may read statement deliveries and retry them (the admin's Retry action)."""
    user = User.objects.create_user("otto", password="pw-otto", is_staff=True)
    with_permission(user, "view_statementdelivery")
    return with_permission(user, "change_statementdelivery")


def _stored_counts(standin: Any) -> Counter[str]:
    return Counter(puid for call in standin.calls if call.status == 201 for puid in call.puids)


def _dead_rows(client: Any) -> str:
    page = client.get("/admin/queue_app/statementdelivery/", {"status": "dead"})
    assert page.status_code == 200
    return page.content.decode()


def _retry_in_admin(client: Any, job: StatementDelivery) -> str:
    answer = client.post(
        "/admin/queue_app/statementdelivery/",
        {"action": "retry", "_selected_action": [job.pk]},
        follow=True,
    )
    assert answer.status_code == 200
    return answer.content.decode()


def test_the_databases_own_422_makes_a_dead_job_an_operator_can_read(
    posts, alice, standin, operator, client
):
    (good,) = built(posts, alice)
    # A statement whose body the contract refuses, written past the builder (as a SQL shell
    # could) and sent with the local check off: only the database can refuse it now.
    decision = decide(posts, alice, verdict="approve", reason="verified")
    body = canonical_json({**good.statement, "puid": "posts-bad", "category": "NOT_A_CATEGORY"})
    bad = StatementOfReasons.objects.create(
        decision=decision,
        kind=StatementKind.RESTRICTION,
        puid="posts-bad",
        body=body,
        sha256=statement_sha256(body),
    )
    StatementDelivery.objects.create(statement=bad, channel=TDB, next_attempt_at=timezone.now())

    assert delivery.submit_statements(check_locally=False) == 2
    # The database answered the batch with 422 and its per-field errors; the good statement
    # went again on its own in the same pass and was stored.
    assert [call.status for call in standin.calls] == [422, 201]
    assert set(standin.calls[0].puids) == {good.puid, "posts-bad"}
    assert list(standin.stored()) == [good.puid]
    job = bad.deliveries.get(channel=TDB)
    assert job.dead and job.done_at is None and job.attempts == 1
    # The stand-in's words for the field, as the contract has them, behind the field's name.
    reason = contract.validate_statement(bad.statement)["category"][0]
    assert job.last_error == f"The Transparency Database refused it:\ncategory: {reason}"
    assert good.deliveries.get(channel=TDB).done_at is not None

    # An operator reads it: the admin's dead deliveries, with the field and the reason.
    client.force_login(operator)
    page = _dead_rows(client)
    assert "posts-bad" in page and "NOT_A_CATEGORY" in page and "category:" in page
    assert good.puid not in page
    # And /ops/ counts it dead.
    staff = User.objects.create_user("olga", password="pw-olga", is_staff=True)
    client.force_login(staff)
    ops = client.get("/ops/").content.decode()
    row = re.search(
        r'<tr data-queue="posts">(.*?)</tr>', ops.split('id="statement-figures"')[1], re.S
    )
    assert row is not None and 'data-figure="dead">1<' in row.group(1)

    # Dead stays dead: the worker sends it no more until an operator acts.
    make_due()
    assert delivery.submit_statements(check_locally=False) == 0
    # A retry sends the statement as built: its own field is wrong, so the database refuses it
    # again, and it is dead again with the same words (such a statement is corrected by an
    # overturn, whose statement has a PUID of its own). Nothing is stored for it.
    client.force_login(operator)
    assert "Put 1 dead delivery(ies) back in line." in _retry_in_admin(client, job)
    assert delivery.submit_statements(check_locally=False) == 1
    job.refresh_from_db()
    assert job.dead and job.attempts == 1 and f"category: {reason}" in job.last_error
    assert [call.status for call in standin.calls] == [422, 201, 422]
    assert list(standin.stored()) == [good.puid]


class _LaggingDatabase:
    """The database's reading of the contract, one keyword behind ours: it refuses statements
    naming KEYWORD_PHISHING with a per-field 422 until `fixed`."""

    def __init__(self) -> None:
        self.fixed = False

    def validate_batch(self, statements: Any) -> dict[str, list[str]]:
        errors = contract.validate_batch(statements)
        if not self.fixed and isinstance(statements, list):
            for index, statement in enumerate(statements):
                if "KEYWORD_PHISHING" in statement.get("category_specification", []):
                    errors[f"statements.{index}.category_specification"] = [
                        "The selected category_specification.0 is invalid."
                    ]
        return errors


def test_a_422_whose_cause_is_fixed_is_delivered_by_the_operators_retry(
    posts, alice, standin, operator, client, monkeypatch
):
    lagging = _LaggingDatabase()
    monkeypatch.setattr(
        standin_module,
        "contract",
        SimpleNamespace(
            validate_batch=lagging.validate_batch,
            validate_statement=contract.validate_statement,
            duplicate_puids=contract.duplicate_puids,
        ),
    )
    (statement,) = built(posts, alice)  # valid by our contract, keyword KEYWORD_PHISHING
    assert statement.valid and "KEYWORD_PHISHING" in statement.statement["category_specification"]
    # The local check passes it (it is valid by our reading); the database refuses it.
    assert delivery.submit_statements() == 1
    assert [call.status for call in standin.calls] == [422]
    job = statement.deliveries.get(channel=TDB)
    assert job.dead
    assert job.last_error == (
        "The Transparency Database refused it:\n"
        "category_specification: The selected category_specification.0 is invalid."
    )
    client.force_login(operator)
    assert "category_specification" in _dead_rows(client)

    # The database's list is corrected; the operator retries; the worker delivers it, once.
    lagging.fixed = True
    assert "Put 1 dead delivery(ies) back in line." in _retry_in_admin(client, job)
    assert delivery.submit_statements() == 1
    job.refresh_from_db()
    assert job.done_at is not None and not job.dead and job.last_error == ""
    assert job.receipt["uuid"] == standin.stored()[statement.puid]["uuid"]
    assert _stored_counts(standin) == Counter({statement.puid: 1})
    assert statement.puid not in _dead_rows(client)
    assert delivery.submit_statements() == 0
