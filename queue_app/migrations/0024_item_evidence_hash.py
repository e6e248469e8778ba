"""The item's evidence hash as it arrived, for the one-statement decide.

ReviewItem.evidence_hash holds the hash of the item's evidence (queue_app/evidence.py) when it
is known without reading the row back: set at intake when the payload is stored exactly as
written (evidence.arrival_evidence_hash), NULL otherwise. The decide compares the form's hash
with it in SQL (sql.CLOSE_AND_RECORD_DECISION) instead of hashing the row in Python between two
round trips.

A stored hash must never outlive the evidence it hashes, whatever code writes the row: the
trigger below clears it in any update that changes the subject, the payload or the attachments
(compared as text, so that 1.0 becoming 1.00, equal as jsonb, counts as a change, as it does
for the hash). It is a column trigger: the claims and closes, which write none of those
columns, do not fire it. A cleared hash only sends that item's decide the two-statement way.

Existing items keep NULL (their decides go the two-statement way), so nothing is rewritten: the
column is added without a default, and the check, which every NULL satisfies, is added NOT VALID
so that adding it does not scan the table under its exclusive lock; it holds for every write.
"""

from django.conf import settings
from django.db import migrations, models

CHECK = "evidence_hash IS NULL OR evidence_hash ~ '^[0-9a-f]{64}$'"

FORWARD = f"""
ALTER TABLE queue_app_reviewitem
  ADD CONSTRAINT item_evidence_hash_is_sha256 CHECK ({CHECK}) NOT VALID;

CREATE FUNCTION queue_app_item_evidence_hash_cleared() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.evidence_hash := NULL;
  RETURN NEW;
END $$;

CREATE TRIGGER item_evidence_hash_cleared
  BEFORE UPDATE OF subject, payload, attachments ON queue_app_reviewitem
  FOR EACH ROW
  WHEN (NEW.subject IS DISTINCT FROM OLD.subject
        OR NEW.payload::text IS DISTINCT FROM OLD.payload::text
        OR NEW.attachments::text IS DISTINCT FROM OLD.attachments::text)
  EXECUTE FUNCTION queue_app_item_evidence_hash_cleared();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS item_evidence_hash_cleared ON queue_app_reviewitem;
DROP FUNCTION IF EXISTS queue_app_item_evidence_hash_cleared();
ALTER TABLE queue_app_reviewitem DROP CONSTRAINT IF EXISTS item_evidence_hash_is_sha256;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("queue_app", "0023_overturn_permission"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="reviewitem",
            name="evidence_hash",
            field=models.CharField(blank=True, editable=False, max_length=64, null=True),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddConstraint(
                    model_name="reviewitem",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("evidence_hash__isnull", True))
                        | models.Q(("evidence_hash__regex", "^[0-9a-f]{64}$")),
                        name="item_evidence_hash_is_sha256",
                    ),
                )
            ],
            database_operations=[migrations.RunSQL(FORWARD, BACKWARD)],
        ),
    ]
