"""Dead effect jobs: listed, and put back in line by the Retry action."""

from __future__ import annotations

import pytest
from django.urls import reverse

from queue_app.apply import apply_one
from queue_app.models import EffectJob, Queue
from tests.admin.conftest import client_for, decide
from tests.conftest import make_items

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(queue, alice) -> list[EffectJob]:
    """Two decisions; the worker gave up on the first (its queue's webhook had no URL)."""
    first, second = make_items(queue, 2)
    Queue.objects.filter(pk=queue.pk).update(effect="webhook", webhook_url="")
    decide(first, alice)
    assert apply_one()  # a configuration error: dead at once, no retries
    Queue.objects.filter(pk=queue.pk).update(effect="log")
    decide(second, alice)
    return list(EffectJob.objects.order_by("decision_id"))


def test_the_dead_filter_lists_only_dead_jobs(jobs, compliance):
    response = client_for(compliance).get(
        reverse("admin:queue_app_effectjob_changelist"), {"status": "dead"}
    )
    assert [job.pk for job in response.context["cl"].result_list] == [jobs[0].pk]
    assert "uses the webhook effect but has no URL" in response.content.decode()


def test_retry_puts_a_dead_job_back_in_line(jobs, compliance):
    response = client_for(compliance).post(
        reverse("admin:queue_app_effectjob_changelist"),
        {"action": "retry", "_selected_action": [job.pk for job in jobs]},
        follow=True,
    )
    assert "Put 1 dead job(s) back in line. 1 were not dead and were left alone." in (
        response.content.decode()
    )
    revived = EffectJob.objects.get(pk=jobs[0].pk)
    assert (revived.dead, revived.attempts) == (False, 0)


def test_staff_without_change_permission_gets_no_retry(jobs, viewer):
    client = client_for(viewer)
    url = reverse("admin:queue_app_effectjob_changelist")
    # No action they may run: Django renders no action form at all.
    assert client.get(url).context["action_form"] is None
    client.post(url, {"action": "retry", "_selected_action": [jobs[0].pk]})
    assert EffectJob.objects.get(pk=jobs[0].pk).dead


def test_the_item_timeline_says_when_an_effect_gave_up(jobs, compliance):
    item_id = jobs[0].decision.item_id
    page = (
        client_for(compliance)
        .get(reverse("admin:queue_app_reviewitem_change", args=[item_id]))
        .content.decode()
    )
    assert f"Decision #{jobs[0].pk} NOT applied: effect job dead" in page
    assert (
        "1 attempt; last error: PermanentEffectError: "
        "Queue &#x27;kyc&#x27; uses the webhook effect but has no URL." in page
    )
