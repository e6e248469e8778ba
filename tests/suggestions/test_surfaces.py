"""Every surface that shows a decision says what its maker saw of the suggestion, and whether
the verdict followed it; an automatic decision reads as the machine's."""

from __future__ import annotations

import csv
import html
import io
import json

import pytest
from django.core.management import call_command

from queue_app.exports import COLUMNS
from queue_app.models import Decision, Queue
from queue_app.services import claim_next, submit_decision
from queue_app.suggestion_words import seen_words
from tests.admin.conftest import client_for, root  # noqa: F401
from tests.conftest import make_items, shown_hash
from tests.suggestions.conftest import suggested_item

pytestmark = pytest.mark.django_db


@pytest.fixture
def decided(queue, alice) -> Decision:
    """A reject that followed a suggestion revealed before the choice, beside a plain decision."""
    item = suggested_item(queue, "s1")
    leased = claim_next(queue=queue, reviewer=alice)
    assert leased.pk == item.pk
    decision = submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=leased.lease_token,
        verdict="reject",
        reason_code="fraud",
        evidence_hash=shown_hash(leased),
        suggestion_view="revealed_before_choice",
        suggestion_shown_at=leased.lease_expires,
    )
    make_items(queue, 1, prefix="plain")
    plain = claim_next(queue=queue, reviewer=alice)
    submit_decision(
        item_id=plain.pk,
        reviewer=alice,
        lease_token=plain.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(plain),
    )
    return Decision.objects.get(pk=decision.pk)


def test_the_words_for_each_view():
    assert seen_words(None, None) == ""
    assert seen_words("automatic", True) == "Automatic (machine)"
    assert seen_words("shown", True) == "Shown with the evidence; followed"
    assert seen_words("revealed_after_choice", False) == "Revealed after choosing; not followed"
    assert seen_words("not_shown", False) == "Not shown; not followed"


def test_the_admin_decision_pages_say_it(decided, root):  # noqa: F811
    client = client_for(root)
    words = "Revealed before choosing; followed"
    listing = html.unescape(client.get("/admin/queue_app/decision/").content.decode())
    assert words in listing
    page = html.unescape(
        client.get(f"/admin/queue_app/decision/{decided.pk}/change/").content.decode()
    )
    assert words in page
    item_page = html.unescape(
        client.get(f"/admin/queue_app/reviewitem/{decided.item_id}/change/").content.decode()
    )
    assert f"Machine suggestion: {words}." in item_page


def test_the_api_payload_says_it(api, decided):
    body = api.get(f"/items/{decided.item_id}").body
    [decision] = body["decisions"]
    assert decision["suggestion_view"] == "revealed_before_choice"
    assert decision["suggestion_followed"] is True
    assert decision["suggestion_shown_at"] is not None


def test_the_export_appends_the_three_columns_after_the_old_ones(decided, tmp_path):
    assert COLUMNS[-3:] == ("suggestion_view", "suggestion_shown_at", "suggestion_followed")
    assert COLUMNS[:-3][-3:] == ("chain_position", "chain_leaf", "chain_state")
    out = tmp_path / "out.jsonl"
    call_command("export_decisions", "--format", "jsonl", "--output", str(out))
    rows = {row["decision_id"]: row for row in map(json.loads, out.read_text().splitlines())}
    row = rows[decided.pk]
    assert row["suggestion_view"] == "revealed_before_choice"
    assert row["suggestion_shown_at"] == decided.suggestion_shown_at.isoformat()
    assert row["suggestion_followed"] is True
    [plain] = [r for pk, r in rows.items() if pk != decided.pk]
    assert (plain["suggestion_view"], plain["suggestion_followed"]) == (None, None)
    out_csv = tmp_path / "out.csv"
    call_command("export_decisions", "--format", "csv", "--output", str(out_csv))
    reader = csv.DictReader(io.StringIO(out_csv.read_text()))
    by_id = {int(r["decision_id"]): r for r in reader}
    assert by_id[decided.pk]["suggestion_view"] == "revealed_before_choice"
    assert by_id[decided.pk]["suggestion_followed"] == "True"


def test_the_check_lane_shows_what_the_maker_saw(queue, alice, bob):
    from queue_app.models import CheckPolicy
    from queue_app.services import claim_lane_task
    from tests.console.conftest import login

    CheckPolicy.objects.create(queue=queue, verdict="reject")
    item = suggested_item(queue, "k1")
    leased = claim_next(queue=queue, reviewer=alice)
    submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=leased.lease_token,
        verdict="reject",
        reason_code="fraud",
        evidence_hash=shown_hash(leased),
    )
    task = claim_lane_task(queue=Queue.objects.get(pk=queue.pk), kind="check", user=bob)
    page = html.unescape(login(bob).get(f"/lanes/{task.pk}/").content.decode())
    assert "Not shown; followed" in page
