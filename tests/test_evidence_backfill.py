"""manage.py backfill_evidence_hashes: open items without a stored hash get the hash of their row.

Items from before the hash was stored have none, and the decide refuses them as changed
evidence. After the backfill they decide in one statement, with the hash the item page shows;
a row that changes while it is hashed keeps no hash.
"""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from queue_app.evidence import item_evidence_hash
from queue_app.models import Decision, ReviewItem
from queue_app.services import claim_next, create_item
from queue_app.services.evidence_backfill import read_unhashed, store_hashes
from tests.conftest import approve_as_shown

PAYLOADS = [
    {"amount": Decimal("12.50"), "s": "ü €"},
    # jsonb stores these differently from how they were written: intake stores no hash.
    {"integral": Decimal("12")},
    {"exponent": Decimal("1E+2")},
    {"negative_zero": Decimal("-0.0")},
    {"float": 1e16},
    {"nested": [{"x": Decimal("1.0E-7")}, [Decimal("-1.5"), 0]], "big": 10**50},
]


def _items(queue, payloads) -> list[ReviewItem]:
    items = [
        create_item(queue=queue, subject=f"case {n}", payload=p, idempotency_key=f"bf-{n}")[0]
        for n, p in enumerate(payloads)
    ]
    # As before hashes were stored: no stored hash at all.
    ReviewItem.objects.filter(pk__in=[i.pk for i in items]).update(evidence_hash=None)
    return items


def _backfill(*args: str) -> str:
    out = StringIO()
    call_command("backfill_evidence_hashes", *args, stdout=out)
    return out.getvalue()


def test_open_items_get_the_hash_of_their_row_and_then_decide_in_one_statement(
    queue, alice, explained_refusals
):
    items = _items(queue, PAYLOADS)
    with_files = items[0]
    ReviewItem.objects.filter(pk=with_files.pk).update(
        attachments={"id.pdf": {"sha256": "a" * 64, "content_type": "application/pdf", "size": 3}}
    )
    assert "Stored the evidence hash of 6 open items." in _backfill("--batch", "4")
    for item in ReviewItem.objects.filter(pk__in=[i.pk for i in items]):
        assert item.evidence_hash == item_evidence_hash(item)
    for _ in items:
        approve_as_shown(claim_next(queue=queue, reviewer=alice), alice, queue_id=queue.pk)
    assert explained_refusals == []
    assert Decision.objects.count() == len(items)


def test_decided_items_and_stored_hashes_are_left_alone(queue, alice):
    decided, kept, open_ = _items(queue, PAYLOADS[:3])
    leased = claim_next(queue=queue, reviewer=alice)
    assert leased.pk == decided.pk
    # Decided with a hash (the decide needs one), then left without, as an old row would be.
    ReviewItem.objects.filter(pk=decided.pk).update(evidence_hash=item_evidence_hash(leased))
    approve_as_shown(leased, alice, queue_id=queue.pk)
    ReviewItem.objects.filter(pk=decided.pk).update(evidence_hash=None)
    ReviewItem.objects.filter(pk=kept.pk).update(evidence_hash="0" * 64)
    assert "Stored the evidence hash of 1 open items." in _backfill()
    hashes = dict(ReviewItem.objects.values_list("pk", "evidence_hash"))
    assert hashes[decided.pk] is None
    assert hashes[kept.pk] == "0" * 64
    assert hashes[open_.pk] == item_evidence_hash(ReviewItem.objects.get(pk=open_.pk))


def test_a_row_that_changes_while_it_is_hashed_keeps_no_hash(queue):
    first, second = _items(queue, PAYLOADS[:2])
    rows = read_unhashed(after=0, batch=10)
    assert [row["id"] for row in rows] == [first.pk, second.pk]
    ReviewItem.objects.filter(pk=first.pk).update(payload={"amount": Decimal("99.00")})
    ReviewItem.objects.filter(pk=second.pk).update(subject="renamed")
    assert store_hashes(rows) == 0
    assert set(ReviewItem.objects.values_list("evidence_hash", flat=True)) == {None}
    # The next run hashes them as they are now.
    assert "Stored the evidence hash of 2 open items." in _backfill()
    for item in ReviewItem.objects.all():
        assert item.evidence_hash == item_evidence_hash(item)


def test_a_dry_run_counts_and_stores_nothing(queue):
    _items(queue, PAYLOADS)
    assert "6 open items have no stored evidence hash." in _backfill("--dry-run", "--batch", "2")
    assert set(ReviewItem.objects.values_list("evidence_hash", flat=True)) == {None}


@pytest.mark.parametrize("batch", ["0", "-1", "10001"])
def test_a_batch_size_out_of_range_is_refused(queue, batch):
    _items(queue, PAYLOADS[:1])
    with pytest.raises(CommandError, match="--batch must be between 1 and 10000"):
        _backfill("--batch", batch)
    assert ReviewItem.objects.get().evidence_hash is None
