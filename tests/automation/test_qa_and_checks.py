"""The QA sample of automatic decisions, and maker-checker policies for the machine."""

from __future__ import annotations

from decimal import Decimal

import pytest

from queue_app.models import CheckPolicy, EffectJob, ItemState, LaneKind, LaneTask
from queue_app.second_person import automatic_qa_draw, draw_samples
from queue_app.services import claim_lane_task, claim_next, confirm_check
from tests.automation.conftest import arrive, automate, suggestion
from tests.conftest import approve_as_shown

pytestmark = pytest.mark.django_db


def _qa_tasks(item) -> list[LaneTask]:
    return list(LaneTask.objects.filter(item=item, kind=LaneKind.QA))


def test_at_100_percent_every_automatic_decision_goes_to_blind_qa(queue, machine):
    automate(queue, machine, qa_rate="100")

    items = [arrive(queue, suggestion("approve", "0.95")) for _ in range(5)]

    for item in items:
        [task] = _qa_tasks(item)
        assert task.maker_id == machine.pk
        assert task.decision.suggestion_view == "automatic"
        assert task.state == "open"


def test_at_the_smallest_rate_the_draw_decides_and_almost_nothing_is_drawn(queue, machine):
    automate(queue, machine, qa_rate="0.01")

    items = [arrive(queue, suggestion("reject", "0.95")) for _ in range(20)]

    for item in items:
        expected = draw_samples(automatic_qa_draw(item_id=item.pk), Decimal("0.01"))
        assert bool(_qa_tasks(item)) is expected
    assert not draw_samples(0, 0)  # a rate of 0 never draws, not even the smallest draw


def test_the_rate_is_honoured_and_each_draw_is_the_reproducible_one(queue, machine):
    automate(queue, machine, qa_rate="30")

    items = [arrive(queue, suggestion("approve", "0.95")) for _ in range(120)]

    # Exactly the items whose keyed draw falls below the rate (the SQL comparison and
    # second_person.draw_samples agree), and so about 30 % of them: the draw is an HMAC,
    # uniform; 36 ± 25 is five standard deviations of Binomial(120, 0.3) either way.
    sampled = [item for item in items if _qa_tasks(item)]
    expected = [
        item for item in items if draw_samples(automatic_qa_draw(item_id=item.pk), Decimal("30"))
    ]
    assert [i.pk for i in sampled] == [i.pk for i in expected]
    assert 11 <= len(sampled) <= 61


def test_the_qa_rate_for_people_does_not_draw_automatic_decisions(queue, machine):
    queue.qa_rate = Decimal("100")
    automate(queue, machine, qa_rate="0.01")

    items = [arrive(queue, suggestion("approve", "0.95")) for _ in range(10)]

    drawn = [i for i in items if draw_samples(automatic_qa_draw(item_id=i.pk), Decimal("0.01"))]
    assert sum(len(_qa_tasks(i)) for i in items) == len(drawn)


def test_a_machine_only_policy_sends_the_machines_decision_to_a_check(queue, machine, alice, bob):
    automate(queue, machine, qa_rate="100")
    CheckPolicy.objects.create(queue=queue, verdict="approve", path="", machine_only=True)

    item = arrive(queue, suggestion("approve", "0.95"))

    item.refresh_from_db()
    assert item.state == ItemState.AWAITING_CHECK
    [task] = LaneTask.objects.filter(item=item)
    assert task.kind == LaneKind.CHECK
    assert task.maker_id == machine.pk
    assert task.due_at == item.due_at
    # No effect until a person confirms it; the QA draw waits for the confirmation too.
    assert not EffectJob.objects.filter(decision__item=item).exists()

    held = claim_lane_task(queue=queue, kind="check", user=bob)
    assert held is not None and held.pk == task.pk
    confirm_check(task_id=held.pk, user=bob, lease_token=held.lease_token)
    item.refresh_from_db()
    assert item.state == ItemState.DECIDED
    assert EffectJob.objects.filter(decision__item=item).count() == 1
    # Drawn at confirmation, at the rate for automatic decisions (people's rate here is 0).
    assert queue.qa_rate == 0
    [qa] = _qa_tasks(item)
    assert qa.maker_id == machine.pk


def test_a_confirmed_machine_decision_is_drawn_by_its_own_draw(queue, machine, bob):
    automate(queue, machine, qa_rate="50")
    queue.qa_rate = Decimal("100")  # people's rate: not the one that applies
    queue.save()
    CheckPolicy.objects.create(queue=queue, verdict="approve", path="", machine_only=True)
    items = [arrive(queue, suggestion("approve", "0.95")) for _ in range(6)]

    for _ in items:
        held = claim_lane_task(queue=queue, kind="check", user=bob)
        assert held is not None
        confirm_check(task_id=held.pk, user=bob, lease_token=held.lease_token)

    for item in items:
        expected = draw_samples(automatic_qa_draw(item_id=item.pk), Decimal("50"))
        assert bool(_qa_tasks(item)) is expected


def test_a_machine_only_policy_does_not_hold_peoples_decisions(queue, machine, alice):
    automate(queue, machine)
    CheckPolicy.objects.create(queue=queue, verdict="approve", path="", machine_only=True)
    item = arrive(queue, suggestion("approve", "0.5"))  # below the threshold: for people

    claimed = claim_next(queue=queue, reviewer=alice)
    assert claimed is not None and claimed.pk == item.pk
    decision = approve_as_shown(claimed, alice)

    assert decision.awaiting_check is False
    item.refresh_from_db()
    assert item.state == ItemState.DECIDED
    assert not LaneTask.objects.filter(item=item, kind=LaneKind.CHECK).exists()


def test_a_machine_only_policy_of_another_verdict_lets_the_machine_decide(queue, machine):
    automate(queue, machine)
    CheckPolicy.objects.create(queue=queue, verdict="reject", path="", machine_only=True)

    item = arrive(queue, suggestion("approve", "0.95"))

    assert item.state == ItemState.DECIDED


def test_a_policy_for_everyone_holds_the_machines_decision_too(queue, machine):
    automate(queue, machine)
    CheckPolicy.objects.create(
        queue=queue, verdict="approve", path="amount", threshold=Decimal("10.00")
    )

    held = arrive(queue, suggestion("approve", "0.95"), payload={"amount": "12.50"})
    free = arrive(queue, suggestion("approve", "0.95"), payload={"amount": "9.99"})

    assert held.state == ItemState.AWAITING_CHECK
    assert free.state == ItemState.DECIDED
