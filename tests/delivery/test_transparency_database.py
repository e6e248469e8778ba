"""Submission to the Transparency Database, against the stand-in over real HTTP."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from queue_app import delivery
from queue_app.models import DeliveryChannel, StatementDelivery, StatementKind, StatementOfReasons
from queue_app.services.statements import canonical_json, statement_sha256
from queue_app.transparency import submitter
from tests.delivery.conftest import built, decide, make_due

TDB = DeliveryChannel.TRANSPARENCY_DATABASE


def _jobs(statements: list[StatementOfReasons]) -> list[StatementDelivery]:
    return [s.deliveries.get(channel=TDB) for s in statements]


def _sent_puids(standin) -> Counter[str]:
    return Counter(puid for call in standin.calls if call.status == 201 for puid in call.puids)


@pytest.mark.django_db
def test_a_batch_is_accepted_and_each_job_keeps_its_uuid(posts, alice, standin):
    statements = built(posts, alice, 3)
    assert delivery.submit_statements() == 3
    assert delivery.submit_statements() == 0
    stored = standin.stored()
    assert sorted(stored) == sorted(s.puid for s in statements)
    assert len(standin.calls) == 1
    for job in _jobs(statements):
        assert job.done_at is not None and not job.dead
        assert job.receipt["uuid"] == stored[job.statement.puid]["uuid"]
        assert job.receipt["permalink"]


@pytest.mark.django_db
def test_nothing_is_submitted_without_a_database_configured(posts, alice, settings):
    settings.REVIEW_TDB_URL = ""
    (statement,) = built(posts, alice)
    assert delivery.submit_statements() == 0
    assert _jobs([statement])[0].done_at is None


@pytest.mark.django_db
def test_a_lost_201_is_retried_and_none_is_stored_twice_or_lost(posts, alice, standin):
    statements = built(posts, alice, 2)
    standin.lose_next_answer()
    assert delivery.submit_statements() == 2
    for job in _jobs(statements):
        assert job.done_at is None and not job.dead and job.next_attempt_at > timezone.now()
        assert "may be stored" in job.last_error
    # Stored by the stand-in although we never read its answer.
    assert sorted(standin.stored()) == sorted(s.puid for s in statements)

    make_due()
    assert delivery.submit_statements() == 2
    assert sorted(standin.stored()) == sorted(s.puid for s in statements)
    assert _sent_puids(standin) == Counter({s.puid: 1 for s in statements})
    assert [call.status for call in standin.calls] == [201, 422]
    for job in _jobs(statements):
        assert job.done_at is not None and job.receipt == {"existing_puid": True}


@pytest.mark.django_db
def test_a_refused_statement_is_a_dead_job_an_operator_can_read(posts, alice, standin):
    (good,) = built(posts, alice)
    # A statement whose body the contract refuses although it was built as valid (the contract
    # tightened since, say): written past the builder, as a SQL shell could.
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
    assert delivery.submit_statements() == 2
    (refused,) = _jobs([bad])
    assert refused.dead and refused.done_at is None
    assert refused.last_error.startswith("The Transparency Database refused it:")
    assert "category" in refused.last_error
    assert sorted(standin.stored()) == [good.puid]
    assert _jobs([good])[0].done_at is not None
    # Dead stays dead until an operator retries it.
    make_due()
    assert delivery.submit_statements() == 0


@pytest.mark.django_db
def test_a_429_is_retried_after_the_wait_it_asks_for(posts, alice, standin):
    statements = built(posts, alice, 2)
    standin.fail_next(1, status=429, retry_after="120")
    before = timezone.now()
    assert delivery.submit_statements() == 2
    for job in _jobs(statements):
        assert job.done_at is None and not job.dead and job.attempts == 1
        assert job.next_attempt_at >= before + timedelta(seconds=119)
        assert "429" in job.last_error
    assert delivery.submit_statements() == 0
    assert standin.stored() == {}

    make_due()
    assert delivery.submit_statements() == 2
    assert sorted(standin.stored()) == sorted(s.puid for s in statements)


@pytest.mark.django_db
def test_a_server_error_backs_off(posts, alice, standin):
    (statement,) = built(posts, alice)
    standin.fail_next(1, status=503)
    assert delivery.submit_statements() == 1
    (job,) = _jobs([statement])
    assert job.done_at is None and not job.dead and job.next_attempt_at > timezone.now()
    assert "503" in job.last_error


@pytest.mark.django_db(transaction=True)
def test_two_workers_never_send_one_statement_twice(posts, alice, standin, monkeypatch):
    statements = built(posts, alice, 3)
    inside, gate = threading.Event(), threading.Event()
    real_submit = submitter.submit

    def held_submit(*args, **kwargs):
        result = real_submit(*args, **kwargs)
        if threading.current_thread().name == "first":
            inside.set()
            gate.wait(30)
        return result

    monkeypatch.setattr(submitter, "submit", held_submit)
    outcome: list[object] = []

    def first() -> None:
        try:
            outcome.append(delivery.submit_statements())
        finally:
            connections.close_all()

    thread = threading.Thread(target=first, name="first")
    thread.start()
    try:
        assert inside.wait(30), "the first worker never sent"
        # The first holds its claim (sent, not committed): the second finds nothing to send.
        assert delivery.submit_statements() == 0
    finally:
        gate.set()
        thread.join(60)
    assert outcome == [3]
    assert delivery.submit_statements() == 0
    assert _sent_puids(standin) == Counter({s.puid: 1 for s in statements})
    assert len(standin.calls) == 1
    assert all(job.done_at is not None for job in _jobs(statements))


@pytest.mark.django_db
def test_an_unset_token_waits_naming_its_variable_and_no_token_is_logged(
    posts, alice, standin, monkeypatch, caplog
):
    from tests.delivery.conftest import TOKEN, TOKEN_ENV

    (statement,) = built(posts, alice)
    monkeypatch.delenv(TOKEN_ENV)
    assert delivery.submit_statements() == 1
    (job,) = _jobs([statement])
    assert job.done_at is None and not job.dead
    assert TOKEN_ENV in job.last_error
    assert standin.calls == []

    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    make_due()
    assert delivery.submit_statements() == 1
    assert list(standin.stored()) == [statement.puid]
    assert TOKEN not in caplog.text


@pytest.mark.django_db
def test_a_statement_refused_for_good_does_not_hold_back_the_one_replacing_it(
    posts, alice, supervisor, standin
):
    """The database keeps no order between statements: a dead earlier submission (refused for
    good) must not keep the overturn's statement out of it forever. The notice channel keeps
    its order: the affected person is not told of a replacement before the first."""
    from queue_app.apply import apply_batch
    from queue_app.services import overturn_decision
    from tests.conftest import with_overturn_permission

    (first,) = built(posts, alice)
    StatementDelivery.objects.filter(statement=first).update(dead=True)  # refused for good
    # The queue's policy now restricts approvals: the overturn's statement is a restriction
    # of its own, with a submission, replacing the first.
    posts.statement_policy.restricting_verdict = "approve"
    posts.statement_policy.save()
    overturn = overturn_decision(
        decision_id=first.decision_id,
        admin=with_overturn_permission(supervisor),
        corrected_verdict="approve",
        reason_code="reviewer_error",
        note="Restricted on other grounds",
    )
    while apply_batch():
        pass
    second = StatementOfReasons.objects.get(decision_id=overturn.pk)
    assert second.replaces_id == first.pk and second.kind == StatementKind.RESTRICTION
    assert delivery.submit_statements() == 1
    assert list(standin.stored()) == [second.puid]
    assert second.deliveries.get(channel=TDB).done_at is not None
    # The first's dead notice still holds the second's back until an operator retries it.
    assert delivery.deliver_notices() == 0
