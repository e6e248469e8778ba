"""Blind QA is one rule: every page the URL configuration has, walked as the QA holder.

bob holds the blind QA review of alice's approval of item X (confirmed by carol). Every URL
pattern is filled with the scenario's ids (X, an item Y of the same subject, the decision, its
check and QA tasks, the queue) and fetched with GET as bob, who is also staff with every view
permission and can_overturn, signed in with his second factor: no response may carry the
decision's reason, note or maker, nor a verdict rendered as the decision's.
"""

from __future__ import annotations

import itertools
import re
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import URLPattern, URLResolver, get_resolver

from queue_app.models import LaneTask, ReasonCode
from queue_app.services import claim_lane_task, confirm_check, create_item, subject_history
from tests.conftest import with_overturn_permission
from tests.lanes.conftest import decide_one

pytestmark = pytest.mark.django_db

REASON_LABEL = "Zq-blind-reason-label"
NOTE = "Zq-blind-secret-note"
MAKER = "zq-maker-alice"
# How a decision's verdict and reason are rendered on the pages that show one (the item
# page's history, a lane page's maker panel, the subject list): none may appear for bob. The
# reason's label alone is no marker: the queue's configuration and the QA form list it.
DECISION_MARKUP = (
    'class="maker-verdict',
    "verdict-tag verdict-approve",
    "<td>Approve</td>",
    f"<td>{REASON_LABEL}</td>",
    f"<dd>{REASON_LABEL}</dd>",
    f'<div class="quiet">{REASON_LABEL}</div>',
)
# Pages whose figures are aggregates over all decisions, not any one decision: /ops/'s reason
# shares name the reason's label among the queue's approvals.
AGGREGATES = {"/ops/": (f"{REASON_LABEL}",)}

# Routes the walk cannot fill, and why. Everything else is fetched.
NOT_WALKED = {
    "admin/(?P<url>.*)$": "the admin's catch-all: it answers paths no other pattern does",
    "api/v1/^(?P<path>.*)$": "the API's catch-all: its JSON 404 for unknown paths",
    "api/v1/items/<item_id>/attachments/<name>": "an attachment's bytes: evidence, no decision",
    "items/<int:item_id>/attachments/<str:sha256>/": "an attachment's bytes: evidence",
    "items/<int:item_id>/attachments/<str:sha256>/reveal/": "an attachment's bytes: evidence",
    "items/<int:item_id>/attachments/<str:sha256>/pages/<int:page>/": (
        "a PDF attachment's page as a PNG: evidence, no decision"
    ),
}

CONVERTER = re.compile(r"<(?:(?P<conv>\w+):)?(?P<name>\w+)>")


@pytest.fixture
def scenario(checked_queue, reviewers_group, carol, bob) -> dict[str, Any]:
    checked_queue.qa_rate = Decimal(100)
    checked_queue.save(update_fields=["qa_rate"])
    ReasonCode.objects.create(
        queue=checked_queue, verdict="approve", code="zq_blind", label=REASON_LABEL
    )
    maker = User.objects.create_user(MAKER, password="pw")
    maker.groups.add(reviewers_group)
    decision = decide_one(checked_queue, maker, reason="zq_blind", note=NOTE)
    check = claim_lane_task(queue=checked_queue, kind="check", user=carol)
    confirm_check(task_id=check.pk, user=carol, lease_token=check.lease_token)
    x = decision.item
    x.subject_key = "cust-zq"
    x.save(update_fields=["subject_key"])
    y = create_item(
        queue=checked_queue,
        subject="Case Y",
        payload={"variance_amount": "5"},
        idempotency_key="zq-y",
        source_hash="zq-y",
        subject_key="cust-zq",
    )[0]
    User.objects.filter(pk=bob.pk).update(is_staff=True)
    bob.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="queue_app", codename__startswith="view")
    )
    bob = with_overturn_permission(bob)
    qa = claim_lane_task(queue=checked_queue, kind="qa", user=bob)
    assert qa is not None and qa.decision_id == decision.pk
    return {
        "queue": checked_queue,
        "decision": decision,
        "x": x,
        "y": y,
        "check": LaneTask.objects.get(pk=check.pk),
        "qa": qa,
        "bob": bob,
        "carol": carol,
    }


def _routes(resolver: URLResolver, prefix: str = "") -> list[str]:
    routes = []
    for entry in resolver.url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            routes += _routes(entry, route)
        elif isinstance(entry, URLPattern):
            routes.append(route)
    return routes


def _fill(route: str, ids: list[int], scenario: dict[str, Any]) -> list[str] | str:
    """Every URL the route gives with the scenario's values, or why it cannot be filled."""
    if route.startswith("^") or "(?P" in route:
        return _fill_regex(route)
    names = CONVERTER.findall(route)
    choices = []
    for conv, name in names:
        if conv in ("int", "path", "") and (name.endswith("id") or name == "object_id"):
            choices.append([str(i) for i in ids])
        elif name == "slug":
            choices.append([scenario["queue"].slug])
        elif name == "kind":
            choices.append(["check", "qa", "adjudication"])
        elif name == "app_label":
            choices.append(["queue_app"])
        else:
            return f"no value for <{conv}:{name}>"
    urls = []
    for values in itertools.product(*choices):
        url = route
        for value in values:
            url = CONVERTER.sub(value, url, count=1)
        urls.append("/" + url)
    return urls


def _fill_regex(route: str) -> list[str] | str:
    # The admin's app index is the one regular-expression route: ^(?P<app_label>a|b|…)/$.
    if "(?P<app_label>" in route:
        prefix = route.split("^", 1)[0]
        return ["/" + prefix + "queue_app/"]
    return "a regular expression with no known value"


def test_it_hides_the_decision_from_its_qa_holder_on_every_url(scenario, client):
    ids = sorted(
        {
            scenario["x"].pk,
            scenario["y"].pk,
            scenario["decision"].pk,
            scenario["check"].pk,
            scenario["qa"].pk,
        }
    )
    client.force_login(scenario["bob"])
    walked, skipped, leaks = 0, {}, []
    for route in _routes(get_resolver()):
        if route in NOT_WALKED:
            skipped[route] = NOT_WALKED[route]
            continue
        urls = _fill(route, ids, scenario)
        if isinstance(urls, str):
            skipped[route] = urls
            continue
        for url in urls:
            body = client.get(url).content.decode(errors="replace")
            walked += 1
            for marker in (NOTE, MAKER, *DECISION_MARKUP):
                if marker in body and marker not in AGGREGATES.get(url, ()):
                    leaks.append((url, marker))
    assert not leaks, leaks
    assert walked > 100, walked
    # Every route the walk could not fill is named with its reason in NOT_WALKED.
    assert set(skipped) == set(NOT_WALKED), skipped


def test_the_walked_pages_do_show_the_decision_to_someone_not_holding_its_qa(scenario, client):
    # The walk's control: the same pages name the decision to carol, so its markers can fail.
    client.force_login(scenario["carol"])
    item_page = client.get(f"/items/{scenario['x'].pk}/").content.decode()
    assert NOTE in item_page and REASON_LABEL in item_page and MAKER in item_page
    check_page = client.get(f"/lanes/{scenario['check'].pk}/").content.decode()
    assert REASON_LABEL in check_page and 'class="maker-verdict' in check_page
    subject_page = client.get(f"/items/{scenario['y'].pk}/").content.decode()
    assert "verdict-tag verdict-approve" in subject_page


def test_it_lists_the_qa_holders_item_without_its_outcome_in_the_same_subject_list(scenario):
    rows = subject_history(subject_key="cust-zq", user=scenario["bob"], exclude_id=0)
    [row] = [r for r in rows if r["id"] == scenario["x"].pk]
    assert (row["verdict"], row["reason_label"], row["reviewer"]) == (None, None, None)


def test_it_hides_the_decision_from_its_qa_holder_on_the_three_pages_that_showed_it(
    scenario, client
):
    # The item's own page, the "Same subject" list on another item of that customer, and the
    # decision's done check page.
    client.force_login(scenario["bob"])
    for url in (
        f"/items/{scenario['x'].pk}/",
        f"/items/{scenario['y'].pk}/",
        f"/lanes/{scenario['check'].pk}/",
    ):
        body = client.get(url).content.decode()
        assert client.get(url).status_code == 200, url
        for marker in (NOTE, MAKER, *DECISION_MARKUP):
            assert marker not in body, (url, marker)
    assert "blind QA review" in client.get(f"/items/{scenario['x'].pk}/").content.decode()
