"""/ops/ in a real browser, with demo traffic: it renders, its stylesheet applies, no errors.

The screenshot lands in test-artifacts/ops-dashboard.png; the docs' pictures of /ops/ come from
`make screenshots` (docs/screenshots/; tests never write into docs/).
"""

from __future__ import annotations

import io
import random
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from queue_app.models import Queue, ReviewItem
from queue_app.services import claim_batch, claim_next
from tests.conftest import backdate_lease, make_items, screenshot
from tests.ops.conftest import age_item, backdate_decision, decide_after, mark_applied, mark_dead

REASONS = {
    "kyc": {
        "approve": (["identity_verified", "low_risk_match"], [8, 2]),
        "reject": (
            ["document_expired", "face_mismatch", "document_tampered", "sanctions_match"],
            [5, 3, 1, 1],
        ),
        "escalate": (["needs_edd", "policy_gap"], [3, 1]),
    },
    "reconciliation": {
        "approve": (["timing_difference", "within_tolerance"], [3, 2]),
        "reject": (["missing_entry", "duplicate_posting", "fx_error"], [2, 3, 1]),
        "escalate": (["material_variance"], [1]),
    },
}


def make_demo_traffic() -> None:
    """A day of reviewing on top of seed_demo: decisions, abandoned leases, a stuck outbox."""
    call_command("seed_demo", items=120, stdout=io.StringIO())
    rng = random.Random(7)
    people = list(User.objects.filter(username__in=["alice", "bob", "carol"]).order_by("pk"))
    for slug, per_hour in (("kyc", (1, 5)), ("reconciliation", (0, 3))):
        queue = Queue.objects.get(slug=slug)
        # Items seed_demo decided itself (its checks and QA samples) are not handed out again.
        pending = list(ReviewItem.objects.filter(queue=queue, state="pending").order_by("pk"))
        for hours_ago in range(23, -1, -1):
            for _ in range(rng.randint(*per_hour)):
                item = pending.pop()
                verdict = rng.choices(["approve", "reject", "escalate"], [6, 3, 1])[0]
                codes, weights = REASONS[slug][verdict]
                # Handling times with a long tail: most in a few minutes, a few near 15.
                seconds = min(40 + rng.lognormvariate(5.0, 0.7), 15 * 60)
                decision = decide_after(
                    item,
                    rng.choice(people),
                    seconds=seconds,
                    verdict=verdict,
                    reason=rng.choices(codes, weights)[0],
                )
                if hours_ago:
                    backdate_decision(decision, seconds=hours_ago * 3600 + rng.randint(0, 3000))
                if hours_ago:
                    mark_applied(decision)
                elif slug == "kyc":
                    backdate_decision(decision, seconds=9 * 60)  # stuck: made, never applied
        # Abandonment: items handed out and given back once, twice, three times.
        for count, how_many in ((1, 14), (2, 6), (3, 2)):
            for item in pending[:how_many]:
                ReviewItem.objects.filter(pk=item.pk).update(lease_count=count)
            pending = pending[how_many:]
        age_item(pending[-1], seconds=3 * 3600 + 20 * 60)
    kyc = Queue.objects.get(slug="kyc")
    recon = Queue.objects.get(slug="reconciliation")
    recon.max_in_flight = 12
    recon.save()
    for person in people:
        claim_next(queue=kyc, reviewer=person)
    claim_batch(
        queue=recon, worker=User.objects.get(username="admin"), n=10, ttl=timedelta(minutes=15)
    )
    walked_away = claim_next(queue=recon, reviewer=people[2])
    backdate_lease(walked_away.pk)
    dead = decide_after(
        claim_next(queue=kyc, reviewer=people[0]),
        people[0],
        seconds=200,
        reason="identity_verified",
    )
    mark_dead(dead, error="webhook https://ledger.internal/hooks/kyc answered 503 after 8 attempts")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_ops_dashboard_renders_with_demo_traffic(live_server, page):
    make_demo_traffic()
    admin = User.objects.get(username="admin")
    client = Client()
    client.force_login(admin)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on(
        "console",
        lambda msg: (
            errors.append(msg.text)
            if msg.type == "error" and "favicon.ico" not in str(msg.location.get("url"))
            else None
        ),
    )
    # Chromium asks for /favicon.ico by itself; the product has none yet.
    page.on(
        "response",
        lambda r: (
            errors.append(f"{r.status} {r.url}")
            if r.status >= 400 and not r.url.endswith("/favicon.ico")
            else None
        ),
    )
    page.set_viewport_size({"width": 1280, "height": 900})

    page.goto(f"{live_server.url}/ops/")
    screenshot(page, "ops-dashboard")

    assert page.title().startswith("Operations")
    assert page.locator("#unapplied-alarm").is_visible()
    assert page.locator("svg.chart").count() == 10  # two per queue, five demo queues
    # The stylesheet applied: bars take their colour from ops.css, not from inline style.
    fill = page.locator("#queue-kyc svg.chart .bar rect").first.evaluate(
        "el => getComputedStyle(el).fill"
    )
    assert fill == "rgb(10, 88, 168)"  # --rc-color-primary, light
    assert page.locator("#queue-reconciliation .tile--warn").is_visible()
    assert page.locator(".ops-dead tr[data-decision]").count() == 1
    screenshot(page, "ops-dashboard")
    assert errors == []


# For each column of the page's tables: the header's text-align and its first cell's.
ALIGNMENTS = """
() => [...document.querySelectorAll('.ops-summary, .ops-dead table')].flatMap(table => {
  const heads = [...table.querySelectorAll('thead th')];
  const cells = [...table.querySelector('tbody tr').children];
  return heads.map((th, i) => [th.textContent.trim(),
                               getComputedStyle(th).textAlign,
                               getComputedStyle(cells[i]).textAlign]);
})
"""


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_ops_headers_line_up_with_their_numbers(live_server, page, queue, alice):
    [item] = make_items(queue, 1)
    mark_dead(decide_after(item, alice, seconds=30, reason="verified"))
    admin = User.objects.create_superuser("root", password="pw-root")
    client = Client()
    client.force_login(admin)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"{live_server.url}/ops/")

    columns = page.evaluate(ALIGNMENTS)

    numeric = [name for name, _, cell in columns if cell == "right"]
    assert {"Pending", "Dead jobs", "Decision", "Attempts"} <= set(numeric)
    side = {"start": "left", "left": "left", "right": "right", "end": "right"}
    misaligned = [(name, th, cell) for name, th, cell in columns if side[th] != side[cell]]
    assert misaligned == []
