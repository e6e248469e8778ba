"""seed_demo: realistic data, and running it twice changes nothing."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command

from queue_app.models import Queue, ReasonCode, ReviewItem

pytestmark = pytest.mark.django_db


def _counts() -> tuple[int, ...]:
    return (
        Queue.objects.count(),
        ReasonCode.objects.count(),
        ReviewItem.objects.count(),
        User.objects.count(),
        Group.objects.count(),
    )


def test_it_seeds_queues_users_and_items_idempotently(monkeypatch, capsys):
    monkeypatch.setenv("DEMO_PASSWORD", "demo-password-1")
    call_command("seed_demo", items=20)
    first = _counts()
    call_command("seed_demo", items=20)
    assert _counts() == first
    assert set(Queue.objects.values_list("slug", flat=True)) == {
        "kyc",
        "reconciliation",
        "escalation",
        "transaction-screening",
        "content-moderation",
    }
    assert ReviewItem.objects.filter(queue__slug="reconciliation").count() == 20
    recon = ReviewItem.objects.get(idempotency_key="demo-reconciliation-0")
    assert recon.payload["variance_amount"] == Decimal("12345678901234.57")
    assert recon.payload["match_decision"] in {"MATCHED", "PARTIAL", "UNMATCHED"}
    assert User.objects.get(username="alice").check_password("demo-password-1")
    assert Group.objects.get(name="Admins").permissions.filter(codename="can_overturn").exists()
    assert not User.objects.get(username="alice").is_staff


def test_every_demo_reconciliation_adds_up(capsys):
    call_command("seed_demo")  # the default size, as `make run` seeds it

    recons = ReviewItem.objects.filter(queue__slug="reconciliation")
    assert recons.count() == 150
    for item in recons:
        p = item.payload
        # The item page shows all three: variance is ledger minus bank, to the cent.
        assert p["variance_amount"] == p["ledger_amount"] - p["bank_amount"], item.subject
        if p["match_decision"] == "MATCHED":
            assert abs(p["variance_amount"]) <= Decimal("2.50"), item.subject
    assert {p["match_decision"] for p in recons.values_list("payload", flat=True)} == {
        "MATCHED",
        "PARTIAL",
        "UNMATCHED",
    }


def test_demo_applicants_have_distinct_names(capsys):
    call_command("seed_demo")

    names = [
        payload["applicant"]["name"]
        for payload in ReviewItem.objects.filter(queue__slug="kyc").values_list(
            "payload", flat=True
        )
    ]
    assert len(names) == 150
    assert len(set(names)) == len(names)


def test_demo_names_stay_distinct_past_every_pairing():
    from queue_app.management.commands.seed_demo import applicant_names

    assert len(set(applicant_names(1000))) == 1000


def test_the_demo_has_a_check_and_a_qa_review_waiting_for_someone_other_than_the_maker(
    monkeypatch, capsys
):
    from django.test import Client

    from queue_app.models import CheckPolicy, Decision, LaneTask
    from queue_app.services import claim_lane_task

    monkeypatch.setenv("DEMO_PASSWORD", "demo-password-1")
    call_command("seed_demo", items=20)
    first = (Decision.objects.count(), LaneTask.objects.count())
    call_command("seed_demo", items=20)
    assert (Decision.objects.count(), LaneTask.objects.count()) == first  # a rerun decides nothing

    recon = Queue.objects.get(slug="reconciliation")
    assert recon.qa_rate > 0
    policy = CheckPolicy.objects.get(queue=recon)
    assert (policy.verdict, policy.path) == ("approve", "variance_amount")
    bob = User.objects.get(username="bob")
    checks = list(LaneTask.objects.filter(queue=recon, kind="check", state="open").order_by("id"))
    assert checks
    for check in checks:
        assert check.maker_id == bob.pk
        assert check.item.state == "awaiting_check"
        assert check.item.payload["variance_amount"] >= policy.threshold
    # Next check's order: the item due soonest (none last), then the oldest.
    check = min(checks, key=lambda t: (t.due_at is None, t.due_at or t.created_at, t.created_at))
    assert all(c.due_at == c.item.due_at for c in checks)
    assert LaneTask.objects.filter(queue=recon, kind="qa", state="open", maker=bob).exists()
    assert set(
        Decision.objects.filter(queue=recon).values_list("reviewer__username", flat=True)
    ) == {"bob"}

    # The home page shows both lanes to alice, who may check; the maker gets neither task.
    alice = User.objects.get(username="alice")
    client = Client()
    client.force_login(alice)
    home = client.get("/").content.decode()
    assert 'data-queue="reconciliation" data-lane="check"' in home
    assert 'data-queue="reconciliation" data-lane="qa"' in home
    assert "Next check" in home and "Next QA" in home
    assert claim_lane_task(queue=recon, kind="check", user=bob) is None
    assert claim_lane_task(queue=recon, kind="qa", user=bob) is None
    assert claim_lane_task(queue=recon, kind="check", user=alice).pk == check.pk


def test_the_demo_gives_the_oversight_figures_something_to_say(monkeypatch, capsys):
    from queue_app.models import Decision, LaneOutcome
    from queue_app.selectors.oversight import read_oversight

    monkeypatch.setenv("DEMO_PASSWORD", "demo-password-1")
    call_command("seed_demo", items=20)
    first = (
        ReviewItem.objects.filter(queue__slug="transaction-screening").count(),
        Decision.objects.count(),
        LaneOutcome.objects.count(),
    )
    call_command("seed_demo", items=20)
    assert (
        ReviewItem.objects.filter(queue__slug="transaction-screening").count(),
        Decision.objects.count(),
        LaneOutcome.objects.count(),
    ) == first  # a rerun changes nothing

    screening = Queue.objects.get(slug="transaction-screening")
    assert screening.suggestion_display == "on_request"
    assert screening.auto_decide_above is not None
    # Open work carries suggestions for the reviewer's page.
    assert ReviewItem.objects.filter(
        queue=screening, state="pending", suggestion__isnull=False
    ).exists()

    [q] = [q for q in read_oversight().queues if q.slug == "transaction-screening"]
    # Every band has people's decisions, some of them overrides: the model is wrong on purpose.
    assert all(band.followed.n > 0 for band in q.calibration[:5])
    assert sum(band.overridden.hits for band in q.calibration) > 0
    # People saw the suggestion before choosing and did not, and follow more when they did.
    assert q.bias.seen.n > 0 and q.bias.unseen.n > 0
    assert q.bias.gap is not None and q.bias.gap_interval[0] > 0  # clearly, not by chance
    # The model decided some on its own, and blind QA reviewed some of those.
    assert q.automatic > 0 and q.automatic_qa.n > 0
    assert q.automatic_qa.hits < q.automatic_qa.n  # a wrong machine call, caught
    assert [r.reviewer for r in q.reviewers] == ["alice", "bob", "carol"]
    # alice, who asks to see the suggestion first, follows it more often than the team.
    assert q.reviewers[0].followed.value > q.team.value


def test_the_demo_moderates_content_with_statements_sent(monkeypatch, capsys):
    """content-moderation: three removals with valid statements, each notice delivered and each
    statement stored by the stand-in database; an approval without one; two posts open; an
    appeal waiting. The dashboard counts them sent; a rerun changes nothing."""
    from django.test import Client

    from queue_app.management.moderation_demo import SLUG
    from queue_app.models import Decision, StatementDelivery, StatementOfReasons

    monkeypatch.setenv("DEMO_PASSWORD", "demo-password-1")
    call_command("seed_demo", items=5)
    assert "3 statement(s) of reasons submitted" in capsys.readouterr().out
    queue = Queue.objects.get(slug=SLUG)
    statements = list(StatementOfReasons.objects.filter(decision__queue=queue))
    assert len(statements) == 3
    assert all(s.valid and s.kind == "restriction" for s in statements)
    assert {s.statement["category"] for s in statements} == {
        "STATEMENT_CATEGORY_SCAMS_AND_FRAUD",
        "STATEMENT_CATEGORY_ILLEGAL_OR_HARMFUL_SPEECH",
        "STATEMENT_CATEGORY_OTHER_VIOLATION_TC",
    }
    jobs = StatementDelivery.objects.filter(statement__in=statements)
    assert jobs.count() == 6 and not jobs.filter(done_at__isnull=True).exists()
    assert all(job.receipt.get("uuid") for job in jobs.filter(channel="tdb"))
    assert Decision.objects.filter(queue=queue).count() == 4
    assert ReviewItem.objects.filter(queue=queue, state="pending").count() == 2
    # Nothing personal from the posts in what went to the database.
    for statement in statements:
        for value in ("@quickprofits_24", "@true_patriot_88", "@bestwatches_outlet"):
            assert value not in statement.body
    assert queue.webhook_url == ""  # the stand-in platform is gone: notices say so

    client = Client()
    client.force_login(User.objects.get(username="admin"))
    page = client.get("/ops/").content.decode()
    row = page.split('id="statement-figures"')[1].split(f'<tr data-queue="{SLUG}">')[1]
    row = row.split("</tr>")[0]
    assert 'data-figure="built">3<' in row and 'data-figure="sent">3<' in row

    # An appeal waits in the appeals lane, answering the newest removal; a rerun files no other.
    from queue_app.models import Appeal

    appeal = Appeal.objects.get(queue=queue)
    assert appeal.task.state == "open" and appeal.decision.queue_id == queue.pk

    call_command("seed_demo", items=5)
    assert StatementOfReasons.objects.filter(decision__queue=queue).count() == 3
    assert Decision.objects.filter(queue=queue).count() == 4
    assert Appeal.objects.filter(queue=queue).count() == 1
