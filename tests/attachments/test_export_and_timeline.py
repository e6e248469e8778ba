"""Attachments in the audit trail: the export keeps their digests, the admin timeline names them."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from queue_app.exports import decisions_between, export_lines
from queue_app.services import claim_next, put_attachment, record_reveal, submit_decision
from tests.attachments.conftest import PDF_BYTES, image_bytes
from tests.conftest import shown_hash

pytestmark = pytest.mark.django_db


def test_the_export_keeps_the_digests_a_decision_was_made_over(item, queue, alice, supervisor):
    with_files = put_attachment(item_id=item.pk, actor=supervisor, name="b.pdf", data=PDF_BYTES)
    with_files = put_attachment(
        item_id=item.pk, actor=supervisor, name="a-front", data=image_bytes()
    )
    claimed = claim_next(queue=queue, reviewer=alice)
    submit_decision(
        item_id=item.pk,
        reviewer=alice,
        lease_token=claimed.lease_token,
        verdict="approve",
        reason_code="verified",
        evidence_hash=shown_hash(claimed),
    )
    [line] = export_lines(decisions_between(), fmt="jsonl")
    row = json.loads(line)
    entries = with_files.attachments
    assert row["attachments"] == (
        f"a-front={entries['a-front']['sha256']} b.pdf={entries['b.pdf']['sha256']}"
    )
    assert row["evidence_hash"] == shown_hash(with_files)
    header, csv_row = list(export_lines(decisions_between(), fmt="csv"))
    assert header.strip().endswith(
        ",attachments,status,chain_position,chain_leaf,chain_state,"
        "suggestion_view,suggestion_shown_at,suggestion_followed"
    )
    assert "," + row["attachments"] + "," in csv_row


def test_the_admin_timeline_names_each_file_and_each_reveal(item, alice, supervisor):
    put_attachment(item_id=item.pk, actor=supervisor, name="selfie", data=image_bytes())
    updated = put_attachment(
        item_id=item.pk, actor=supervisor, name="selfie", data=image_bytes(color="white")
    )
    sha = updated.attachments["selfie"]["sha256"]
    record_reveal(item=updated, user=alice, name="selfie", sha256=sha)
    supervisor.is_superuser = True
    supervisor.save()
    client = Client()
    client.force_login(supervisor)
    page = client.get(f"/admin/queue_app/reviewitem/{item.pk}/change/").content.decode()
    assert page.count("Attachment added or replaced") == 2
    assert f"selfie: image/png, sha256 {sha} (replaced sha256" in page
    assert "Sensitive image revealed" in page
