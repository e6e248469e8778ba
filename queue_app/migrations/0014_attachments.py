"""Evidence attachments, sensitive queues, and the index behind a reviewer's own work.

- ReviewItem.attachments: the item's files by name ({name: {sha256, content_type, size}}); the
  bytes are content-addressed in the attachments storage. On the row, so the fenced close reads
  them with the row it locks and the evidence hash covers them. A check keeps it an object, and
  a trigger refuses changing it once the item is decided (whatever code writes the row: the
  service's own check runs under the row lock, this catches anything else).
- Queue.sensitive: images in such queues show blurred until revealed, one reveal one event.
- decision_reviewer_recent: My work reads one reviewer's decisions by time; without it every
  count would walk the reviewer's whole history through the foreign-key index and sort.

Nothing here rewrites a decision row (append-only); existing items get an empty object, which
the evidence hash leaves out, so every hash already carried by a form or a decision still holds.
"""

from django.conf import settings
from django.db import migrations, models

FORWARD = """
ALTER TABLE queue_app_reviewitem
  ADD CONSTRAINT item_attachments_object CHECK (jsonb_typeof(attachments) = 'object');

CREATE FUNCTION queue_app_attachments_frozen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.state = 'decided' AND NEW.attachments IS DISTINCT FROM OLD.attachments THEN
    RAISE EXCEPTION 'item % is decided: its attachments are part of the decided evidence', OLD.id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER item_attachments_frozen BEFORE UPDATE OF attachments ON queue_app_reviewitem
  FOR EACH ROW EXECUTE FUNCTION queue_app_attachments_frozen();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS item_attachments_frozen ON queue_app_reviewitem;
DROP FUNCTION IF EXISTS queue_app_attachments_frozen();
ALTER TABLE queue_app_reviewitem DROP CONSTRAINT IF EXISTS item_attachments_object;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("queue_app", "0013_access_history"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="queue",
            name="sensitive",
            field=models.BooleanField(
                db_default=False,
                default=False,
                help_text=(
                    "Show attached images blurred and in greyscale until the reviewer reveals "
                    "each one (a click or a key); each reveal is recorded in the item's history."
                ),
            ),
        ),
        migrations.AddField(
            model_name="reviewitem",
            name="attachments",
            field=models.JSONField(
                blank=True,
                db_default=models.Value({}, output_field=models.JSONField()),
                default=dict,
            ),
        ),
        migrations.AlterField(
            model_name="itemevent",
            name="kind",
            field=models.CharField(
                choices=[
                    ("created", "Created"),
                    ("claimed", "Claimed"),
                    ("reclaimed", "Re-claimed after expiry"),
                    ("renewed", "Renewed"),
                    ("released", "Released"),
                    ("auto_escalated", "Auto-escalated"),
                    ("decided", "Decided"),
                    ("evidence_replaced", "Evidence replaced"),
                    ("attachment_put", "Attachment added or replaced"),
                    ("attachment_revealed", "Sensitive image revealed"),
                ],
                max_length=32,
            ),
        ),
        migrations.AddIndex(
            model_name="decision",
            index=models.Index(fields=["reviewer", "-created_at"], name="decision_reviewer_recent"),
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
