"""The lane pages show the item's documents: they are in the evidence a checker confirms and a
QA reviewer or adjudicator judges, so each of them sees and may open them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User

from queue_app.models import Decision, ItemEvent, ItemEventKind, LaneTask
from queue_app.services import claim_lane_task, claim_next, record_qa_review, submit_decision
from tests.api.conftest import caller_for, make_client
from tests.attachments.conftest import image_bytes, put_file
from tests.conftest import shown_hash
from tests.console.conftest import login
from tests.lanes.conftest import new_item

pytestmark = pytest.mark.django_db


def decide_with_a_file(queue, maker, intake, key: str) -> tuple[Decision, str]:
    """An item upstream attached an image to, decided by the maker having seen it."""
    item = new_item(queue, key)
    reply = put_file(intake, item.pk, "id-front", image_bytes("PNG"))
    assert reply.status == 200, reply.body
    leased = claim_next(queue=queue, reviewer=maker)
    assert leased.pk == item.pk
    decision = submit_decision(
        item_id=leased.pk,
        reviewer=maker,
        lease_token=leased.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(leased),
    )
    return decision, reply.body["attachments"][0]["sha256"]


@pytest.fixture
def upstream(queue):
    """An intake client granted the kyc queue: it attaches the files."""
    return caller_for(make_client("upstream", [queue], adjudicate=False)[1])


@pytest.fixture
def adjudicator_elsewhere(db) -> User:
    """May adjudicate (can_overturn) but may not review the queue."""
    user = User.objects.create_user("erin", password="pw-erin", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="can_overturn"))
    return User.objects.get(pk=user.pk)


def test_the_check_page_shows_the_documents_the_maker_saw(checked_queue, alice, carol):
    recon = caller_for(make_client("recon-upstream", [checked_queue], adjudicate=False)[1])
    decision, sha = decide_with_a_file(checked_queue, alice, recon, "with-a-file")
    item = decision.item
    task = LaneTask.objects.get(decision=decision, kind="check")
    checker = login(carol)
    page = checker.get(f"/lanes/{task.pk}/").content.decode()
    file_url = f"/items/{item.pk}/attachments/{sha}/"
    assert 'id="attachments-title"' in page and file_url in page
    assert 'id="evidence-changed"' not in page  # what the maker saw, files included
    assert checker.get(file_url).status_code == 200


def test_the_qa_page_and_the_adjudication_page_show_and_serve_the_item_files(
    queue, alice, carol, upstream, adjudicator_elsewhere, outsider
):
    queue.qa_rate = 100
    queue.save(update_fields=["qa_rate"])
    decision, sha = decide_with_a_file(queue, alice, upstream, "first")
    qa = LaneTask.objects.get(decision=decision, kind="qa")
    file_url = f"/items/{decision.item_id}/attachments/{sha}/"

    qa_page = login(carol).get(f"/lanes/{qa.pk}/").content.decode()
    assert 'id="attachments-title"' in qa_page and file_url in qa_page
    assert login(carol).get(file_url).status_code == 200

    # Before there is an adjudication, one who may adjudicate but not review sees nothing.
    assert login(adjudicator_elsewhere).get(file_url).status_code == 404
    task = claim_lane_task(queue=queue, kind="qa", user=carol)
    record_qa_review(
        task_id=task.pk,
        user=carol,
        lease_token=task.lease_token,
        verdict="reject",
        reason_code="fraud",
    )
    adjudication = LaneTask.objects.get(kind="adjudication")
    judge = login(adjudicator_elsewhere)
    page = judge.get(f"/lanes/{adjudication.pk}/")
    assert page.status_code == 200
    assert file_url in page.content.decode()
    assert judge.get(file_url).status_code == 200
    # ...and only this item's files: the rule names the item, not the user's lanes.
    other, other_sha = decide_with_a_file(queue, alice, upstream, "second")
    assert judge.get(f"/items/{other.item_id}/attachments/{other_sha}/").status_code == 404
    # Someone who may neither review nor adjudicate never gets the file.
    assert login(outsider).get(file_url).status_code == 404


def test_a_reveal_from_a_lane_page_returns_to_it_and_never_off_site(queue, alice, carol, upstream):
    queue.sensitive = True
    queue.qa_rate = 100
    queue.save(update_fields=["sensitive", "qa_rate"])
    decision, sha = decide_with_a_file(queue, alice, upstream, "first")
    qa = LaneTask.objects.get(decision=decision, kind="qa")
    client = login(carol)
    page = client.get(f"/lanes/{qa.pk}/").content.decode()
    assert "Reveal image id-front" in page
    assert f'name="next" value="/lanes/{qa.pk}/"' in page
    reveal = f"/items/{decision.item_id}/attachments/{sha}/reveal/"
    back = client.post(reveal, {"next": f"/lanes/{qa.pk}/"})
    assert back.status_code == 302
    assert back["Location"] == f"/lanes/{qa.pk}/#attachment-{sha[:12]}"
    assert "Reveal image" not in client.get(f"/lanes/{qa.pk}/").content.decode()
    for elsewhere in ["https://evil.example/", "//evil.example/x", "javascript:alert(1)"]:
        away = client.post(reveal, {"next": elsewhere})
        assert away["Location"] == f"/items/{decision.item_id}/#attachment-{sha[:12]}"
    assert ItemEvent.objects.filter(kind=ItemEventKind.ATTACHMENT_REVEALED).count() == 4
