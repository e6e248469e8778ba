"""An escalation carries its origin's files; a stored deadline lies in a range pages can show.

- The escalation's insert trigger (reviewitem_handoff_insert, from 0015) also adds the
  origin's attachments to the new row, whatever code inserts it: the senior reviewer decides on
  the same documents, and an exact copy keeps the row's evidence hash. If the trigger had to
  add anything, the hash the writer computed did not cover it, so it is cleared (the decide
  then hashes the row), as item_evidence_hash_cleared does for an update.
- item_due_at_in_range: due_at is NULL or in [2000-01-01, 3000-01-01) UTC, the range of every
  time input (queue_app/datetimes.py). A deadline outside it (intake before the bound, or a
  hold that pushed one out) is moved to the nearest bound first: one before 2000 stays
  breached, one past 2999 stays out of sight, and every page can show both again. The check is
  added NOT VALID, the rows are moved, then it is validated.
"""

import datetime

from django.conf import settings
from django.db import migrations, models

HANDOFF_INSERT_WITH_FILES = """
CREATE OR REPLACE FUNCTION queue_app_item_handoff_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  given jsonb;
BEGIN
  IF NEW.escalated_from_id IS NOT NULL THEN
    NEW.excluded_reviewer_ids := ARRAY(
      SELECT DISTINCT u FROM unnest(
               coalesce(NEW.excluded_reviewer_ids, '{}')
               || (SELECT o.excluded_reviewer_ids FROM queue_app_reviewitem AS o
                    WHERE o.id = NEW.escalated_from_id)
               || ARRAY(SELECT d.reviewer_id FROM queue_app_decision AS d
                         WHERE d.item_id = NEW.escalated_from_id)) AS u
       ORDER BY u);
    -- The origin's files go with it (its own entries win a name both have). The origin is
    -- decided, so its attachments are frozen (item_attachments_frozen): this is what was
    -- decided on.
    given := coalesce(NEW.attachments, '{}');
    NEW.attachments := coalesce((SELECT o.attachments FROM queue_app_reviewitem AS o
                                  WHERE o.id = NEW.escalated_from_id), '{}') || given;
    IF NEW.attachments::text IS DISTINCT FROM given::text THEN
      NEW.evidence_hash := NULL;
    END IF;
  END IF;
  IF NEW.lease_owner_id = ANY (NEW.excluded_reviewer_ids) THEN
    RAISE EXCEPTION 'hand-off: reviewer % may not lease item %: they took part earlier in its chain',
      NEW.lease_owner_id, NEW.id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END;
$$;
"""

HANDOFF_INSERT_BEFORE = """
CREATE OR REPLACE FUNCTION queue_app_item_handoff_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.escalated_from_id IS NOT NULL THEN
    NEW.excluded_reviewer_ids := ARRAY(
      SELECT DISTINCT u FROM unnest(
               coalesce(NEW.excluded_reviewer_ids, '{}')
               || (SELECT o.excluded_reviewer_ids FROM queue_app_reviewitem AS o
                    WHERE o.id = NEW.escalated_from_id)
               || ARRAY(SELECT d.reviewer_id FROM queue_app_decision AS d
                         WHERE d.item_id = NEW.escalated_from_id)) AS u
       ORDER BY u);
  END IF;
  IF NEW.lease_owner_id = ANY (NEW.excluded_reviewer_ids) THEN
    RAISE EXCEPTION 'hand-off: reviewer % may not lease item %: they took part earlier in its chain',
      NEW.lease_owner_id, NEW.id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END;
$$;
"""

EARLIEST = "2000-01-01T00:00:00+00:00"
LATEST = "3000-01-01T00:00:00+00:00"

DEADLINE_RANGE = f"""
ALTER TABLE queue_app_reviewitem ADD CONSTRAINT item_due_at_in_range
  CHECK (due_at IS NULL OR (due_at >= '{EARLIEST}' AND due_at < '{LATEST}')) NOT VALID;
UPDATE queue_app_reviewitem SET due_at = '{EARLIEST}' WHERE due_at < '{EARLIEST}';
UPDATE queue_app_reviewitem SET due_at = timestamptz '{LATEST}' - interval '1 second'
 WHERE due_at >= '{LATEST}';
ALTER TABLE queue_app_reviewitem VALIDATE CONSTRAINT item_due_at_in_range;
"""

DEADLINE_RANGE_BACKWARD = """
ALTER TABLE queue_app_reviewitem DROP CONSTRAINT IF EXISTS item_due_at_in_range;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("queue_app", "0029_separation_of_duties"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunSQL(HANDOFF_INSERT_WITH_FILES, HANDOFF_INSERT_BEFORE),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddConstraint(
                    model_name="reviewitem",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("due_at__isnull", True))
                        | models.Q(
                            ("due_at__gte", datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)),
                            ("due_at__lt", datetime.datetime(3000, 1, 1, tzinfo=datetime.UTC)),
                        ),
                        name="item_due_at_in_range",
                        violation_error_message=(
                            "The deadline must lie between 2000-01-01 and 2999-12-31 (UTC)."
                        ),
                    ),
                )
            ],
            database_operations=[migrations.RunSQL(DEADLINE_RANGE, DEADLINE_RANGE_BACKWARD)],
        ),
    ]
