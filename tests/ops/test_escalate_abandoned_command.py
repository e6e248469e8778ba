"""manage.py escalate_abandoned: the cron form of the abandonment sweep."""

from __future__ import annotations

import logging

import pytest
from django.core.management import CommandError, call_command

from queue_app.models import ItemEvent, ReviewItem
from queue_app.services import claim_next
from tests.conftest import backdate_lease, make_items

pytestmark = pytest.mark.django_db


def abandon(item: ReviewItem, times: int) -> None:
    ReviewItem.objects.filter(pk=item.pk).update(lease_count=times)


def test_it_moves_abandoned_items_and_says_how_many(queue, capsys, caplog):
    items = make_items(queue, 4)
    for item in items[:3]:
        abandon(item, 3)  # the queue's escalation threshold
    abandon(items[3], 2)

    with caplog.at_level(logging.WARNING, logger="queue_app"):
        call_command("escalate_abandoned", "--batch", "2")  # two batches: 2, then 1

    assert "Moved 3 abandoned items to escalation." in capsys.readouterr().out
    moved = ReviewItem.objects.filter(queue__slug="escalation")
    assert sorted(moved.values_list("pk", flat=True)) == [i.pk for i in items[:3]]
    assert ItemEvent.objects.filter(kind="auto_escalated").count() == 3
    logged = [r for r in caplog.records if r.getMessage() == "item auto-escalated"]
    assert sorted(r.item_id for r in logged) == [i.pk for i in items[:3]]
    assert all(r.trace_id for r in logged)


def test_it_leaves_items_under_a_live_lease(queue, alice, capsys):
    [item] = make_items(queue, 1)
    abandon(item, 2)
    claim_next(queue=queue, reviewer=alice)  # third lease, live

    call_command("escalate_abandoned")
    assert "Moved 0 abandoned items" in capsys.readouterr().out

    backdate_lease(item.pk)
    call_command("escalate_abandoned")
    assert "Moved 1 abandoned item to escalation." in capsys.readouterr().out


def test_it_rejects_a_batch_size_out_of_range(queue):
    with pytest.raises(CommandError, match="between 1 and 10000"):
        call_command("escalate_abandoned", "--batch", "0")
