"""The decide's rules in SQL: one statement decides, a read after a refusal names it.

The maker-checker threshold and the evidence rules are judged by the database functions the
decide statement calls (queue_app_check_needed, queue_app_evidence_warnings). The item page
still shows the warnings through rules.warnings_for; the table below runs both and asserts
they agree.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from queue_app.errors import (
    EvidenceChanged,
    InvalidVerdict,
    NotPermitted,
    StaleLease,
    WarningsNotSeen,
)
from queue_app.jsonutil import exact_dumps
from queue_app.models import CheckPolicy, Decision, EvidenceRule, ReviewItem, RuleTest
from queue_app.rules import warnings_for
from queue_app.services import claim_next, create_item, release_lease, submit_decision
from queue_app.services.decisions import check_needed
from tests.conftest import backdate_lease, make_items, shown_hash

pytestmark = pytest.mark.django_db


def _leased(queue, reviewer, payload: Any = None) -> ReviewItem:
    n = ReviewItem.objects.count()
    create_item(
        queue=queue,
        subject=f"case {n}",
        payload={"amount": "12.50"} if payload is None else payload,
        idempotency_key=f"rules-{n}",
    )
    return claim_next(queue=queue, reviewer=reviewer)


def _decide(item: ReviewItem, reviewer, **overrides: Any) -> Decision:
    fields = {
        "item_id": item.pk,
        "reviewer": reviewer,
        "lease_token": item.lease_token,
        "verdict": "approve",
        "reason_code": "verified",
        "evidence_hash": shown_hash(item),
        "queue_id": item.queue_id,
        "warnings_seen": False,
        **overrides,
    }
    return submit_decision(**fields)


# -- maker-checker policies: the old Python semantics, as a table --------------------------------

THRESHOLD_CASES = [
    # (payload, path, threshold, needs a check)
    ({"amount": Decimal("10000.00")}, "amount", "10000.00", True),
    ({"amount": Decimal("9999.995")}, "amount", "10000.00", False),
    ({"amount": Decimal("9999.99999999999999999999")}, "amount", "10000", False),
    ({"amount": "10000"}, "amount", "10000.00", True),  # numeric strings count
    ({"amount": " 9999.99 "}, "amount", "10000.00", False),  # trimmed, as Decimal() reads it
    ({"amount": "1e4"}, "amount", "10000.00", True),
    ({"amount": "1_0000"}, "amount", "10000.00", True),  # Decimal() ignores underscores
    ({"amount": 10**40}, "amount", "10000.00", True),
    ({"amount": Decimal("-20000")}, "amount", "-10000", False),
    ({"amount": "n/a"}, "amount", "10000.00", True),  # not a number: fails safe
    ({"amount": "NaN"}, "amount", "10000.00", True),
    ({"amount": "Infinity"}, "amount", "10000.00", True),
    ({"amount": True}, "amount", "1", True),
    ({"amount": None}, "amount", "1", True),
    ({}, "amount", "1", True),  # missing: fails safe
    ({"a": {"b": [Decimal("5"), Decimal("50")]}}, "a.b.1", "10", True),
    ({"a": {"b": [Decimal("5"), Decimal("50")]}}, "a.b.0", "10", False),
    ({"a": {"b": [Decimal("5")]}}, "a.b.-1", "1", True),  # no negative positions
    ({"a": {"b": [Decimal("5")]}}, "a.b.9", "1", True),
    ({"a": [Decimal("5")]}, "a.00", "10", False),
    ({"a": "5"}, "a.0", "1", True),  # a scalar in the way
]


@pytest.mark.parametrize(("payload", "path", "threshold", "needs"), THRESHOLD_CASES)
def test_a_policy_path_and_threshold_are_judged_as_before(queue, payload, path, threshold, needs):
    CheckPolicy.objects.create(
        queue=queue, verdict="approve", path=path, threshold=Decimal(threshold)
    )
    [item] = make_items(queue, 1)
    ReviewItem.objects.filter(pk=item.pk).update(payload=payload)
    assert check_needed(queue_id=queue.pk, verdict="approve", item_id=item.pk) is needs
    assert check_needed(queue_id=queue.pk, verdict="reject", item_id=item.pk) is False


# -- evidence rules: SQL and the page's Python agree ---------------------------------------------

TODAY = timezone.localdate()
PAST = (TODAY - timedelta(days=1)).isoformat()
FUTURE = (TODAY + timedelta(days=1)).isoformat()

RULE_CASES = [
    # (value at the path, test, rule value)
    (PAST, RuleTest.DATE_PAST, ""),
    (FUTURE, RuleTest.DATE_PAST, ""),
    (TODAY.isoformat(), RuleTest.DATE_PAST, ""),
    (f"  {PAST} ", RuleTest.DATE_PAST, ""),
    ("2020-W01-1", RuleTest.DATE_PAST, ""),
    ("2020-02-30", RuleTest.DATE_PAST, ""),
    ("2021-02-29T10:00", RuleTest.DATE_PAST, ""),
    ("2020-01-01T09:00:00+00:00", RuleTest.DATE_PAST, ""),
    ("2020-01-01 09:00:00.123456Z", RuleTest.DATE_PAST, ""),
    ("20200101T0900", RuleTest.DATE_PAST, ""),
    ("2020-01-01T09", RuleTest.DATE_PAST, ""),
    ("2020-01-01T24:00", RuleTest.DATE_PAST, ""),
    ("2999-01-01T09:00:00-05:00", RuleTest.DATE_PAST, ""),
    (f"{FUTURE}T00:00:00", RuleTest.DATE_PAST, ""),
    ("yesterday", RuleTest.DATE_PAST, ""),
    ("2020-1-1", RuleTest.DATE_PAST, ""),
    (Decimal("20200101"), RuleTest.DATE_PAST, ""),
    ("fail", RuleTest.IN_LIST, "fail, review"),
    ("Fail", RuleTest.IN_LIST, "fail, review"),
    (" fail", RuleTest.IN_LIST, "fail, review"),
    ("", RuleTest.IN_LIST, "a,,b"),
    (7, RuleTest.IN_LIST, "7.0, 8"),
    (Decimal("7.5"), RuleTest.IN_LIST, "7.50"),
    (True, RuleTest.IN_LIST, "true"),
    (None, RuleTest.IN_LIST, "null"),
    ({"x": 1}, RuleTest.IN_LIST, "x"),
    (Decimal("0.40"), RuleTest.BELOW, "0.5"),
    (Decimal("0.40"), RuleTest.BELOW, "0.40"),
    (Decimal("0.40"), RuleTest.ABOVE, "0.39999999999999999999"),
    ("0.5", RuleTest.BELOW, "0.50"),
    (" 0.4 ", RuleTest.BELOW, " 0.5"),
    ("1_000", RuleTest.ABOVE, "999"),
    (7, RuleTest.ABOVE, "6.999"),
    ("n/a", RuleTest.BELOW, "0.5"),
    (True, RuleTest.ABOVE, "0"),
    (Decimal("1"), RuleTest.ABOVE, "not a number"),
]


def _sql_matches(value: Any, test: str, rule_value: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT queue_app_rule_matches(%s, %s, queue_app_payload_at(%s::jsonb, 'v'), %s)",
            [test, rule_value, exact_dumps({"v": value}), timezone.get_current_timezone_name()],
        )
        return cursor.fetchone()[0]


@pytest.mark.parametrize(("value", "test", "rule_value"), RULE_CASES)
def test_the_sql_rules_agree_with_the_pages_warnings(value, test, rule_value):
    rule = EvidenceRule(path="v", test=test, value=rule_value, message="m")
    assert _sql_matches(value, test, rule_value) is bool(warnings_for({"v": value}, [rule]))


@pytest.mark.parametrize(
    "path", ["v", "missing", "v.x", "list.1.score", "list.0.score", "list.5", "list.-1", ""]
)
def test_a_path_resolves_as_on_the_page(path):
    payload = {"v": Decimal("1"), "list": [None, {"score": Decimal("3")}], "": Decimal("2")}
    rule = EvidenceRule(path=path, test=RuleTest.ABOVE, value="0", message="m")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT queue_app_rule_matches('above', '0', queue_app_payload_at(%s::jsonb, %s), "
            "'UTC')",
            [exact_dumps(payload), path],
        )
        in_sql = cursor.fetchone()[0]
    assert in_sql is bool(warnings_for(payload, [rule]))


# -- one statement, and a refusal named after it -------------------------------------------------


@pytest.fixture
def ruled(queue):
    EvidenceRule.objects.create(
        queue=queue, path="score", test=RuleTest.BELOW, value="0.5", message="Low score"
    )
    return queue


def test_a_ruled_queue_decides_clean_evidence_in_one_statement(ruled, alice):
    item = _leased(ruled, alice, {"score": Decimal("0.9")})
    with CaptureQueriesContext(connection) as ctx:
        _decide(item, alice, warnings_seen=False)
    # The timeouts and the close-and-record, sent together; no read before or after.
    # (The savepoints are the test's transaction, a BEGIN and COMMIT outside one.)
    statements = [q["sql"] for q in ctx.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert len(statements) == 2, statements
    assert "queue_app_evidence_warnings" in statements[1]
    assert ReviewItem.objects.get(pk=item.pk).state == "decided"


def _refused(item: ReviewItem, reviewer, error: type[Exception], **overrides: Any) -> Exception:
    before = Decision.objects.filter(item_id=item.pk).count()
    with CaptureQueriesContext(connection) as ctx, pytest.raises(error) as raised:
        _decide(item, reviewer, **overrides)
    # The statement that writes, then reads only: the explanation writes nothing.
    writes = [q["sql"] for q in ctx.captured_queries if "INSERT" in q["sql"]]
    assert len(writes) == 1 and "CLOSE" not in writes[0]
    assert "queue_app_evidence_warnings" in writes[0]
    assert Decision.objects.filter(item_id=item.pk).count() == before
    return raised.value


def test_unread_warnings_are_named(ruled, alice, explained_refusals):
    item = _leased(ruled, alice, {"score": Decimal("0.1")})
    _refused(item, alice, WarningsNotSeen)
    assert explained_refusals == [item.pk]
    # Ticked on the console, or a caller that shows no warnings (the API): recorded.
    assert _decide(item, alice, warnings_seen=True).item_id == item.pk


def test_changed_evidence_is_named(queue, alice):
    item = _leased(queue, alice)
    _refused(item, alice, EvidenceChanged, evidence_hash="0" * 64)


def test_an_item_without_a_stored_hash_is_refused_as_changed_evidence(queue, alice):
    item = _leased(queue, alice)
    ReviewItem.objects.filter(pk=item.pk).update(evidence_hash=None)
    _refused(item, alice, EvidenceChanged)


def test_an_escalation_without_a_queue_is_named(queue, alice):
    queue.escalation_queue = None
    queue.save(update_fields=["escalation_queue"])
    item = _leased(queue, alice)
    _refused(item, alice, InvalidVerdict, verdict="escalate", reason_code="policy_gap")


def test_lost_access_is_named(queue, alice):
    item = _leased(queue, alice)
    alice.groups.clear()
    _refused(item, alice, NotPermitted)


def test_a_decided_item_is_named(queue, alice):
    item = _leased(queue, alice)
    _decide(item, alice)
    assert _refused(item, alice, StaleLease).what == "decided_by_you"


def test_a_released_item_is_named(queue, alice):
    item = _leased(queue, alice)
    release_lease(item_id=item.pk, reviewer=alice, lease_token=item.lease_token)
    assert _refused(item, alice, StaleLease).what == "released_by_you"


def test_an_item_taken_after_the_lease_ran_out_is_named(queue, alice, bob):
    item = _leased(queue, alice)
    backdate_lease(item.pk)
    assert claim_next(queue=queue, reviewer=bob).pk == item.pk
    assert _refused(item, alice, StaleLease).what == "taken"
