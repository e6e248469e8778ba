"""The /ops/ dashboard: staff only, and the figures it shows are the figures in the database."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from queue_app.models import EffectJob
from queue_app.ops.views import human_duration
from queue_app.services import claim_next, overturn_decision
from tests.conftest import make_items
from tests.ops.conftest import age_item, backdate_decision, decide_after, mark_dead

pytestmark = pytest.mark.django_db

URL = "/ops/"


def test_it_redirects_anonymous_visitors_to_login(client, settings):
    # The login page is the console's (/accounts/login/); named "login" once it is merged.
    settings.LOGIN_URL = "/accounts/login/"

    response = client.get(URL)

    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/ops/"


def test_it_refuses_reviewers_who_are_not_staff(client, alice):
    client.force_login(alice)

    assert client.get(URL).status_code == 403


def test_it_shows_the_dashboard_to_staff(client, operator, queue):
    client.force_login(operator)

    response = client.get(URL)

    assert response.status_code == 200
    assert response.templates[0].name == "ops/dashboard.html"
    assert b"Operations" in response.content


def summary_cell(html: str, slug: str, figure: str) -> str:
    row = re.search(rf'<tr id="summary-{slug}">(.*?)</tr>', html, re.S).group(1)
    return re.search(rf'data-figure="{figure}">([^<]*)<', row).group(1).strip()


def test_it_shows_each_queues_figures(client, operator, queue, alice):
    items = make_items(queue, 5)
    decide_after(items[1], alice, seconds=30, verdict="reject", reason="fraud")
    claim_next(queue=queue, reviewer=alice)  # items[0]
    age_item(items[4], seconds=2 * 3600 + 5 * 60)
    client.force_login(operator)

    html = client.get(URL).content.decode()

    assert summary_cell(html, "kyc", "pending") == "3"
    assert summary_cell(html, "kyc", "oldest-pending") == "2h 05m"
    assert summary_cell(html, "kyc", "leased") == "1 / 1000"
    assert summary_cell(html, "kyc", "decisions") == "1"
    assert summary_cell(html, "escalation", "pending") == "0"
    assert summary_cell(html, "escalation", "oldest-pending") == "n/a"


def charts_in(html: str) -> list[ET.Element]:
    return [ET.fromstring(svg) for svg in re.findall(r'<svg class="chart".*?</svg>', html, re.S)]


def bars(chart: ET.Element) -> list[tuple[str, int]]:
    ns = "{http://www.w3.org/2000/svg}"
    return [(g.get("data-label"), int(g.get("data-value"))) for g in chart.findall(f"{ns}g")]


def test_its_charts_render_the_values_they_claim(client, operator, queue, alice):
    items = make_items(queue, 4)
    decide_after(items[0], alice, seconds=20)
    decide_after(items[1], alice, seconds=20)
    claim_next(queue=queue, reviewer=alice)
    client.force_login(operator)

    charts = {c.get("aria-label"): c for c in charts_in(client.get(URL).content.decode())}

    assert bars(charts["Kyc: open items by times leased"]) == [
        ("0", 1), ("1", 1), ("2", 0), ("3", 0), ("4", 0), ("5+", 0)
    ]  # fmt: skip
    per_hour = bars(charts["Kyc: decisions per hour"])
    assert len(per_hour) == 24
    assert per_hour[-1][1] == 2
    assert sum(value for _, value in per_hour) == 2


def test_it_raises_the_unapplied_alarm_and_lists_dead_jobs(client, operator, queue, alice):
    items = make_items(queue, 2)
    late = decide_after(items[0], alice, seconds=20)
    backdate_decision(late, seconds=10 * 60)
    dead = decide_after(items[1], alice, seconds=20)
    mark_dead(dead, error="receiver answered 502 Bad Gateway")
    client.force_login(operator)

    html = client.get(URL).content.decode()

    assert 'id="unapplied-alarm"' in html
    assert "1 decision not applied after 5 minutes" in html
    assert f'data-decision="{dead.pk}"' in html
    assert "receiver answered 502 Bad Gateway" in html


def test_it_names_items_whose_effects_wait_behind_a_dead_job(
    client, operator, queue, alice, supervisor
):
    item, other = make_items(queue, 2)
    original = decide_after(item, alice, seconds=20, verdict="reject", reason="fraud")
    mark_dead(original, error="receiver answered 400 Bad Request")
    corrected = overturn_decision(
        decision_id=original.pk,
        admin=supervisor,
        corrected_verdict="approve",
        reason_code="reviewer_error",
    )
    mark_dead(decide_after(other, alice, seconds=20))  # dead, nothing waits behind it
    client.force_login(operator)

    html = client.get(URL).content.decode()

    assert 'id="blocked-alarm"' in html
    assert "1 item with effects held back by a dead job (BLOCKED_EFFECTS)" in html
    row = re.search(rf'<tr data-blocked-item="{item.pk}">(.*?)</tr>', html, re.S)
    assert row, html
    assert f"{original.pk} (reject)" in row.group(1)
    assert "receiver answered 400 Bad Request" in row.group(1)
    assert f"<td>{corrected.pk}</td>" in row.group(1)
    assert f'data-blocked-item="{other.pk}"' not in html


def test_it_raises_no_blocked_alarm_when_nothing_waits(client, operator, queue, alice):
    [item] = make_items(queue, 1)
    mark_dead(decide_after(item, alice, seconds=20))
    client.force_login(operator)

    html = client.get(URL).content.decode()

    assert 'id="blocked-alarm"' not in html
    assert "Blocked items" not in html


def test_it_says_all_is_applied_when_nothing_is_overdue(client, operator, queue, alice):
    [item] = make_items(queue, 1)
    decide_after(item, alice, seconds=20)  # unapplied, but only just made
    client.force_login(operator)

    html = client.get(URL).content.decode()

    assert 'id="unapplied-ok"' in html
    assert 'id="unapplied-alarm"' not in html


def test_it_uses_no_inline_script_or_style(client, operator, queue, alice):
    make_items(queue, 2)
    client.force_login(operator)

    html = client.get(URL).content.decode()

    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)
    assert " style=" not in html
    assert "<style" not in html


def test_it_retries_a_dead_effect_job(client, operator, queue, alice):
    [item] = make_items(queue, 1)
    decision = decide_after(item, alice, seconds=20)
    mark_dead(decision)
    operator.user_permissions.add(Permission.objects.get(codename="change_effectjob"))
    client.force_login(operator)

    response = client.post(reverse("ops:retry_dead_job", args=[decision.pk]), follow=True)

    job = EffectJob.objects.get(pk=decision.pk)
    assert (job.dead, job.attempts) == (False, 0)
    assert b"will be retried" in response.content


def test_it_refuses_retries_from_non_staff(client, alice, queue):
    [item] = make_items(queue, 1)
    decision = decide_after(item, alice, seconds=20)
    mark_dead(decision)
    client.force_login(alice)

    response = client.post(reverse("ops:retry_dead_job", args=[decision.pk]))

    assert response.status_code == 403
    assert EffectJob.objects.get(pk=decision.pk).dead is True


def test_it_refuses_retries_from_staff_without_the_permission(client, operator, queue, alice):
    [item] = make_items(queue, 1)
    decision = decide_after(item, alice, seconds=20)
    mark_dead(decision)
    client.force_login(operator)

    response = client.post(reverse("ops:retry_dead_job", args=[decision.pk]))

    assert response.status_code == 403
    assert EffectJob.objects.get(pk=decision.pk).dead is True
    assert b">Retry</button>" not in client.get(reverse("ops:dashboard")).content


def test_it_explains_a_retry_of_a_job_that_is_not_dead(client, operator, queue, alice):
    [item] = make_items(queue, 1)
    decision = decide_after(item, alice, seconds=20)
    operator.user_permissions.add(Permission.objects.get(codename="change_effectjob"))
    client.force_login(operator)

    response = client.post(reverse("ops:retry_dead_job", args=[decision.pk]), follow=True)

    assert response.status_code == 200
    assert b"has no dead effect job" in response.content


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(None, "n/a"), (38, "38s"), (252, "4m 12s"), (600, "10m"), (7380, "2h 03m"), (7200, "2h"),
     (3 * 86400 + 4 * 3600 + 59, "3d 4h")],
)  # fmt: skip
def test_it_says_durations_the_way_an_operator_does(seconds, said):
    assert human_duration(None if seconds is None else timedelta(seconds=seconds)) == said
