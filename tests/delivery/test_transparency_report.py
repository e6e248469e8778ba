"""The transparency report against counts worked out by hand from a history built for it.

Every expected figure below is a literal, read off the history as it is built (which decision
restricts on which ground, whose delivery is dead or waiting, how long each took), never the
report's own statements run again.
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from datetime import datetime, time, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.utils import timezone

from queue_app import delivery
from queue_app.api.auth import issue_api_client
from queue_app.apply import RetryPolicy, apply_batch
from queue_app.models import (
    Appeal,
    Decision,
    DeliveryChannel,
    LaneOutcome,
    LaneTask,
    Queue,
    ReasonCode,
    ReviewItem,
    StatementDelivery,
    StatementOfReasons,
)
from queue_app.selectors.transparency_report import (
    PeriodError,
    parse_period,
    read_transparency_report,
)
from queue_app.services import overturn_decision
from tests.conftest import make_queue, triggers_off, with_overturn_permission
from tests.delivery.conftest import SECRET_ENV, decide
from tests.statements.conftest import give_policy, map_reason

pytestmark = pytest.mark.django_db

SCAMS = "STATEMENT_CATEGORY_SCAMS_AND_FRAUD"
SPEECH = "STATEMENT_CATEGORY_ILLEGAL_OR_HARMFUL_SPEECH"
ILLEGAL = "DECISION_GROUND_ILLEGAL_CONTENT"
INCOMPATIBLE = "DECISION_GROUND_INCOMPATIBLE_CONTENT"
HOUR = 3600.0


def _statement(decision: Decision) -> StatementOfReasons:
    return StatementOfReasons.objects.get(decision=decision)


def _job(decision: Decision, channel: str) -> StatementDelivery:
    return _statement(decision).deliveries.get(channel=channel)


def _took(decision: Decision, hours: float) -> None:
    # The item arrived `hours` before it was decided: intake to decision is exactly that.
    ReviewItem.objects.filter(pk=decision.item_id).update(
        created_at=decision.created_at - timedelta(hours=hours)
    )


@pytest.fixture
def history(notifying_posts, platform, standin, alice, supervisor, reviewers_group):
    """Two queues' month so far, as worked out by hand in the module's tests.

    posts (visibility: content removed)
      d1 fraud, alice          incompatible, scams   took 1h    notice done, database done
      d2 fraud, alice          incompatible, scams   took 2h    overturned to approve (lifted)
      d3 fraud, API client     incompatible, scams   took 3h    notice DEAD, database done
      d4 document_expired      illegal, speech       took 5h    notice done, database WAITING
      d5 spam (no mapping)     refused by contract   took 8h    no deliveries
      d6 approve, alice        no statement          took 13h
    shop (monetary: suspension), same platform
      e1 fraud, alice          incompatible, scams   took 21h   notice done, database done
      e2 approve, alice        no statement          took 34h
    """
    posts = notifying_posts
    map_reason(
        posts,
        "document_expired",
        decision_ground=ILLEGAL,
        ground="Criminal Code, section 130",
        category=SPEECH,
        keywords=["KEYWORD_HATE_SPEECH"],
    )
    ReasonCode.objects.create(queue=posts, verdict="reject", code="spam", label="Spam")
    shop = make_queue("shop", group=reviewers_group)
    give_policy(shop, decision_visibility=[], decision_monetary="DECISION_MONETARY_SUSPENSION")
    map_reason(shop, "fraud")
    shop.webhook_url = posts.webhook_url
    shop.webhook_secret_env = SECRET_ENV
    shop.save()
    robot, _ = issue_api_client(name="robot", can_intake=True, can_adjudicate=True, queues=[posts])
    robot.user.groups.add(reviewers_group)

    d = {
        "d1": decide(posts, alice),
        "d2": decide(posts, alice),
        "d3": decide(posts, robot.user, client=robot),
        "d4": decide(posts, alice, reason="document_expired"),
        "d5": decide(posts, alice, reason="spam"),
        "d6": decide(posts, alice, verdict="approve", reason="verified"),
        "e1": decide(shop, alice),
        "e2": decide(shop, alice, verdict="approve", reason="verified"),
    }
    for name, hours in {
        "d1": 1,
        "d2": 2,
        "d3": 3,
        "d4": 5,
        "d5": 8,
        "d6": 13,
        "e1": 21,
        "e2": 34,
    }.items():
        _took(d[name], hours)
    while apply_batch():
        pass
    d["overturn"] = overturn_decision(
        decision_id=d["d2"].pk,
        admin=with_overturn_permission(supervisor),
        corrected_verdict="approve",
        reason_code="reviewer_error",
        note="Not fraud after all",
    )
    while apply_batch():
        pass

    # d3's notice: the platform refused it for good. d4's submission: retrying later.
    delivery._failed(
        _job(d["d3"], DeliveryChannel.NOTICE),
        "The notice webhook refused the notice with HTTP 400.",
        policy=RetryPolicy(),
        permanent=True,
    )
    StatementDelivery.objects.filter(
        pk=_job(d["d4"], DeliveryChannel.TRANSPARENCY_DATABASE).pk
    ).update(next_attempt_at=timezone.now() + timedelta(hours=1))
    while delivery.deliver_notices():
        pass
    assert delivery.submit_statements() == 4  # d1, d2, d3, e1
    d["robot"] = robot
    return d


def _today():
    today = timezone.localdate()
    return parse_period(today.isoformat(), today.isoformat())


def test_the_report_matches_the_history_counted_by_hand(history):
    report = read_transparency_report(_today())
    posts, shop = report.queues
    assert (posts.slug, shop.slug) == ("posts", "shop")

    assert (posts.built, posts.restrictions, posts.lifted) == (6, 5, 1)
    assert posts.by_ground == {ILLEGAL: 1, INCOMPATIBLE: 3}
    assert posts.by_category == {(SCAMS, INCOMPATIBLE): 3, (SPEECH, ILLEGAL): 1, ("", ""): 1}
    assert posts.by_kind == {"visibility": 4, "monetary": 0, "provision": 0, "account": 0}
    assert posts.detection_automated == 1
    assert posts.decision_automated == {"fully": 1, "partially": 0, "not_automated": 3}
    assert posts.share(posts.detection_automated) == pytest.approx(1 / 5)
    # d1, d2 and the lifted one reached everyone; d3 and e1's database; d4 waits; d5 refused.
    assert (posts.sent, posts.in_database) == (3, 3)
    assert (posts.refused, posts.dead, posts.waiting, posts.failing) == (1, 1, 1, 2)
    assert (posts.decisions, posts.restricting_decisions, posts.overturns) == (6, 5, 1)
    # 1, 2, 3, 5, 8, 13 hours; restricting: 1, 2, 3, 5, 8.
    assert posts.median_decision_seconds == pytest.approx(4 * HOUR)
    assert posts.median_restriction_seconds == pytest.approx(3 * HOUR)

    assert (shop.built, shop.restrictions, shop.lifted) == (1, 1, 0)
    assert shop.by_kind == {"visibility": 0, "monetary": 1, "provision": 0, "account": 0}
    assert shop.by_category == {(SCAMS, INCOMPATIBLE): 1}
    assert (shop.sent, shop.in_database, shop.failing, shop.waiting) == (1, 1, 0, 0)
    assert (shop.decisions, shop.restricting_decisions, shop.overturns) == (2, 1, 0)
    assert shop.median_decision_seconds == pytest.approx(27.5 * HOUR)  # 21 and 34
    assert shop.median_restriction_seconds == pytest.approx(21 * HOUR)

    every = report.all
    assert (every.slug, every.built, every.restrictions, every.lifted) == ("*", 7, 6, 1)
    assert every.by_ground == {ILLEGAL: 1, INCOMPATIBLE: 4}
    assert every.by_category == {(SCAMS, INCOMPATIBLE): 4, (SPEECH, ILLEGAL): 1, ("", ""): 1}
    assert every.by_kind == {"visibility": 4, "monetary": 1, "provision": 0, "account": 0}
    assert every.decision_automated == {"fully": 1, "partially": 0, "not_automated": 4}
    assert (every.sent, every.in_database, every.refused, every.dead, every.waiting) == (
        4,
        4,
        1,
        1,
        1,
    )
    assert (every.decisions, every.restricting_decisions, every.overturns) == (8, 6, 1)
    # A median of all eight decisions, not of the two queues' medians (4h and 27.5h).
    assert every.median_decision_seconds == pytest.approx(6.5 * HOUR)  # (5 + 8) / 2
    assert every.median_restriction_seconds == pytest.approx(4 * HOUR)  # 1 2 3 5 8 21


def test_a_period_without_the_history_counts_nothing(history):
    yesterday = timezone.localdate() - timedelta(days=1)
    report = read_transparency_report(parse_period(yesterday.isoformat(), yesterday.isoformat()))
    assert report.queues == []
    assert (report.all.built, report.all.restrictions, report.all.decisions) == (0, 0, 0)
    assert report.all.median_decision_seconds is None


def test_both_days_are_included_and_nothing_past_them(posts, alice):
    decision = decide(posts, alice)
    apply_batch()
    today = timezone.localdate()
    tomorrow = timezone.make_aware(datetime.combine(today + timedelta(days=1), time.min))
    # The statement and decision moved to the first instant after today: outside [today, today].
    with triggers_off("queue_app_statementofreasons", "queue_app_decision") as cursor:
        cursor.execute(
            "UPDATE queue_app_statementofreasons SET created_at = %s WHERE decision_id = %s",
            [tomorrow, decision.pk],
        )
        cursor.execute(
            "UPDATE queue_app_decision SET created_at = %s WHERE id = %s", [tomorrow, decision.pk]
        )
    only_today = read_transparency_report(parse_period(today.isoformat(), today.isoformat()))
    assert (only_today.all.restrictions, only_today.all.decisions) == (0, 0)
    two_days = parse_period(today.isoformat(), (today + timedelta(days=1)).isoformat())
    assert read_transparency_report(two_days).all.restrictions == 1
    assert read_transparency_report(two_days).all.decisions == 1


@pytest.mark.parametrize(
    ("first", "last", "says"),
    [
        (None, "2026-06-30", "'from' is required"),
        ("2026-01-01", "", "'to' is required"),
        ("2026-13-01", "2026-06-30", "'from' must be a date as YYYY-MM-DD"),
        ("1 Jan 2026", "2026-06-30", "'from' must be a date as YYYY-MM-DD"),
        ("2026-07-01", "2026-06-30", "is after 'to'"),
        ("2025-01-01", "2026-06-30", "a report covers at most 366"),
    ],
)
def test_a_bad_period_is_refused_saying_why(first, last, says):
    with pytest.raises(PeriodError, match=says):
        parse_period(first, last)


def test_a_full_leap_year_is_one_period():
    period = parse_period("2028-01-01", "2028-12-31")
    assert (period.end - period.start) == timedelta(days=366)


def _operator(client: Any) -> None:
    client.force_login(User.objects.create_user("olga", password="pw-olga", is_staff=True))


def test_the_ops_files_carry_the_same_figures(history, client):
    _operator(client)
    today = timezone.localdate().isoformat()
    answer = client.get("/ops/transparency.json", {"from": today, "to": today})
    assert answer.status_code == 200
    assert f'filename="transparency-{today}-{today}.json"' in answer["Content-Disposition"]
    document = json.loads(answer.content)
    assert document["period"] == {"from": today, "to": today, "time_zone": "UTC"}
    posts = document["queues"][0]
    assert posts["restrictions"]["total"] == 5
    assert posts["restrictions"]["by_ground"] == {ILLEGAL: 1, INCOMPATIBLE: 3}
    assert {"category": SPEECH, "ground": ILLEGAL, "restrictions": 1} in posts["restrictions"][
        "by_category"
    ]
    assert posts["statements"] == {
        "built": 6,
        "sent": 3,
        "in_database": 3,
        "failing": {"refused": 1, "dead": 1},
        "waiting": 1,
    }
    assert posts["automation"]["decision_share"] == pytest.approx(1 / 5)
    assert document["all"]["decisions"]["median_seconds_intake_to_decision"] == pytest.approx(
        6.5 * HOUR
    )

    answer = client.get("/ops/transparency.csv", {"from": today, "to": today})
    assert answer.status_code == 200
    rows = list(csv.DictReader(io.StringIO(answer.content.decode())))
    assert rows[0] == {
        "queue": "*",
        "figure": "period",
        "group": today,
        "ground": today,
        "value": "UTC",
    }
    cells = {(r["queue"], r["figure"], r["group"], r["ground"]): r["value"] for r in rows}
    assert cells[("posts", "restrictions", "", "")] == "5"
    assert cells[("posts", "restrictions_by_category", SCAMS, INCOMPATIBLE)] == "3"
    assert cells[("*", "restrictions_by_kind", "monetary", "")] == "1"
    assert cells[("*", "statements_failing", "dead", "")] == "1"
    assert cells[("posts", "automated_detection_share", "", "")] == "0.2000"
    assert cells[("shop", "median_seconds_intake_to_decision", "restricting", "")] == "75600.0000"


def test_the_ops_files_refuse_a_bad_period_saying_why(client):
    _operator(client)
    answer = client.get("/ops/transparency.csv", {"from": "2026-07-01", "to": "2026-06-30"})
    assert answer.status_code == 400
    assert "is after 'to'" in answer.content.decode()
    answer = client.get("/ops/transparency.json", {"from": "2026-07-01"})
    assert answer.status_code == 400
    assert "'to' is required" in answer.content.decode()
    # Without a period: this year so far.
    answer = client.get("/ops/transparency.json")
    assert answer.status_code == 200
    period = json.loads(answer.content)["period"]
    today = timezone.localdate()
    assert period == {
        "from": today.replace(month=1, day=1).isoformat(),
        "to": today.isoformat(),
        "time_zone": "UTC",
    }


def test_the_command_writes_the_report_and_refuses_a_bad_period(history, tmp_path, capsys):
    today = timezone.localdate().isoformat()
    out = tmp_path / "report.json"
    call_command(
        "export_transparency", "--from", today, "--to", today, "--format", "json", "--output", out
    )
    document = json.loads(out.read_text())
    assert document["all"]["restrictions"]["total"] == 6
    call_command("export_transparency", "--from", today, "--to", today)
    assert "restrictions_by_ground" in capsys.readouterr().out
    with pytest.raises(CommandError, match="must be a date as YYYY-MM-DD"):
        call_command("export_transparency", "--from", "yesterday", "--to", today)
    assert Queue.objects.filter(slug="shop").exists()


# -- appeals --------------------------------------------------------------------------------------


def _appeal(
    history: dict[str, Any],
    name: str,
    *,
    received: float,
    decided: float | None = None,
    result: str = "upheld",
    due: float | None = None,
    decider: User | None = None,
) -> Appeal:
    """An appeal against history[name], received `received` hours ago, decided (by `decider`)
    `decided` hours ago or still pending, due `due` hours from now (negative: past; by default
    14 days after receipt), written as
    rows: the appeals service is not part of this branch; what is counted is the rows."""
    decision: Decision = history[name]
    now = timezone.now()
    due_at = now + (timedelta(hours=due) if due is not None else timedelta(days=14))
    task = LaneTask.objects.create(
        kind="appeal",
        queue_id=decision.queue_id,
        item_id=decision.item_id,
        decision=decision,
        maker_id=decision.reviewer_id,
        due_at=due_at,
    )
    appeal = Appeal.objects.create(
        queue_id=decision.queue_id,
        item_id=decision.item_id,
        decision=decision,
        statement=StatementOfReasons.objects.filter(decision=decision).first(),
        client=history["robot"],
        reference=f"complaint-{name}",
        request_sha256="0" * 64,
        text="I think this was wrong.",
        received_at=now - timedelta(hours=received),
        due_at=due_at,
        window_ends_at=now + timedelta(days=180),
        task=task,
    )
    if decided is None:
        return appeal
    assert decider is not None
    token = uuid.uuid4()
    at = now - timedelta(hours=decided)
    with triggers_off("queue_app_lanetask", "queue_app_laneoutcome") as cursor:
        LaneTask.objects.filter(pk=task.pk).update(
            lease_owner=decider,
            lease_token=token,
            lease_expires=now + timedelta(minutes=5),
            state="done",
            done_at=at,
        )
        LaneOutcome.objects.create(
            task=task,
            kind="appeal",
            result=result,
            actor=decider,
            lease_token=token,
            note="Reviewed the complaint against the evidence.",
            overturn=history["overturn"] if result == "overturned" else None,
        )
        cursor.execute(
            "UPDATE queue_app_laneoutcome SET created_at = %s WHERE task_id = %s", [at, task.pk]
        )
    return appeal


@pytest.fixture
def appeals(history, bob):
    """posts: a1 upheld in 4h, a2 reversed in 2h, a3 waiting past its deadline, a4 received
    three days ago and upheld an hour ago (71h), a5 received and upheld before the period;
    shop: a6 closed, a7 waiting within its deadline. The period: yesterday and today."""
    _appeal(history, "d1", received=10, decided=6, decider=bob)
    _appeal(history, "d2", received=20, decided=18, result="overturned", decider=bob)
    _appeal(history, "d4", received=3, due=-1)
    _appeal(history, "d3", received=72, decided=1, decider=bob)
    _appeal(history, "d6", received=100, decided=80, decider=bob)
    _appeal(history, "e1", received=5, decided=4, result="closed", decider=bob)
    _appeal(history, "e2", received=2, due=10)
    return history


def test_the_appeals_match_the_history_counted_by_hand(appeals):
    today = timezone.localdate()
    period = parse_period((today - timedelta(days=1)).isoformat(), today.isoformat())
    report = read_transparency_report(period)
    posts, shop = report.queues
    a = posts.appeals
    assert (a.received, a.decided, a.upheld, a.reversed, a.closed) == (3, 3, 2, 1, 0)
    assert (a.pending, a.pending_past_deadline) == (1, 1)
    assert a.median_decide_seconds == pytest.approx(4 * HOUR)  # 2, 4 and 71 hours
    assert a.reversed_share.value == pytest.approx(1 / 3)
    low, high = a.reversed_share.interval
    assert 0 < low < 1 / 3 < high < 1

    b = shop.appeals
    assert (b.received, b.decided, b.closed, b.pending, b.pending_past_deadline) == (2, 0, 1, 1, 0)
    assert b.median_decide_seconds is None and b.reversed_share.value is None

    every = report.all.appeals
    assert (every.received, every.decided, every.upheld, every.reversed, every.closed) == (
        5,
        3,
        2,
        1,
        1,
    )
    assert (every.pending, every.pending_past_deadline) == (2, 1)
    assert every.median_decide_seconds == pytest.approx(4 * HOUR)

    # Before the period began: a5 (received 100h, upheld 80h ago) is counted only when the
    # period reaches back to it.
    week = parse_period((today - timedelta(days=6)).isoformat(), today.isoformat())
    wider = read_transparency_report(week).queues[0].appeals
    assert (wider.received, wider.decided, wider.upheld) == (5, 4, 3)


def test_the_ops_files_carry_the_appeals(appeals, client):
    _operator(client)
    today = timezone.localdate()
    query = {"from": (today - timedelta(days=1)).isoformat(), "to": today.isoformat()}
    document = json.loads(client.get("/ops/transparency.json", query).content)
    posts = document["queues"][0]["appeals"]
    assert {k: posts[k] for k in ("received", "decided", "reversed", "pending")} == {
        "received": 3,
        "decided": 3,
        "reversed": 1,
        "pending": 1,
    }
    assert posts["median_seconds_received_to_decided"] == pytest.approx(4 * HOUR)
    rows = list(
        csv.DictReader(io.StringIO(client.get("/ops/transparency.csv", query).content.decode()))
    )
    cells = {(r["queue"], r["figure"], r["group"]): r["value"] for r in rows}
    assert cells[("*", "appeals_received", "")] == "5"
    assert cells[("*", "appeals_pending", "past_deadline")] == "1"
    assert cells[("posts", "appeals_reversed_share", "")] == "0.3333"
