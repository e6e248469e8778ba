"""Escalation is a hand-off to a second person (issue 14).

Nobody who decided in an item's chain of escalations may lease or decide the item that
escalates it, and nobody who abandoned an item may lease or decide it in the queue it was
moved to. The people barred are kept on the item (excluded_reviewer_ids, only ever grown):

- an escalation item gets them from the database as it is inserted: the origin's own list and
  everyone who decided on the origin (so the whole chain of escalated_from ancestors, by
  induction), whatever code writes the row;
- an abandoned item gets the reviewers who held it added by ESCALATE_ABANDONED as it is moved.

The claim passes such items over for those people (sql._CLAIM); triggers here refuse a lease
(an item row naming an excluded lease owner) or a decision by them, so a claim or a write that
raced or skipped the service is refused by the database. The triggers on the item only run
for rows with a non-empty list (a WHEN clause), so ordinary claims pay nothing for them.

Existing escalation items are filled in too (items only: no decision row is touched).
"""

import django.contrib.postgres.fields
from django.db import migrations, models

FORWARD = """
-- Backfill, before the guards exist: an existing escalation's deciders up its chain, and an
-- abandoned item's holders before it was last moved.
WITH RECURSIVE chain (item_id, ancestor_id) AS (
    SELECT id, escalated_from_id FROM queue_app_reviewitem WHERE escalated_from_id IS NOT NULL
    UNION
    SELECT c.item_id, i.escalated_from_id
      FROM chain AS c JOIN queue_app_reviewitem AS i ON i.id = c.ancestor_id
     WHERE i.escalated_from_id IS NOT NULL
), deciders AS (
    SELECT c.item_id, array_agg(DISTINCT d.reviewer_id ORDER BY d.reviewer_id) AS ids
      FROM chain AS c JOIN queue_app_decision AS d ON d.item_id = c.ancestor_id
     GROUP BY c.item_id
)
UPDATE queue_app_reviewitem AS i SET excluded_reviewer_ids = d.ids
  FROM deciders AS d WHERE i.id = d.item_id;

WITH holders AS (
    SELECT e.item_id, array_agg(DISTINCT e.actor_id) AS ids
      FROM queue_app_itemevent AS e
     WHERE e.kind IN ('claimed', 'reclaimed') AND e.actor_id IS NOT NULL
       AND e.at <= (SELECT max(m.at) FROM queue_app_itemevent AS m
                     WHERE m.item_id = e.item_id AND m.kind = 'auto_escalated')
     GROUP BY e.item_id
)
UPDATE queue_app_reviewitem AS i
   SET excluded_reviewer_ids = ARRAY(
         SELECT DISTINCT u FROM unnest(i.excluded_reviewer_ids || h.ids) AS u ORDER BY u)
  FROM holders AS h WHERE i.id = h.item_id;

-- An escalation item bars the origin's barred and everyone who decided on the origin. The
-- origin is decided (closed by the escalate verdict) before its escalation is opened, and an
-- escalate verdict is never overturned, so the origin's decisions are all there to read.
CREATE FUNCTION queue_app_item_handoff_insert() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER reviewitem_handoff_insert BEFORE INSERT ON queue_app_reviewitem
  FOR EACH ROW WHEN (NEW.escalated_from_id IS NOT NULL OR NEW.lease_owner_id IS NOT NULL)
  EXECUTE FUNCTION queue_app_item_handoff_insert();

-- The list only grows, and nobody on it holds the item's lease.
CREATE FUNCTION queue_app_item_handoff_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT (OLD.excluded_reviewer_ids <@ NEW.excluded_reviewer_ids) THEN
    RAISE EXCEPTION 'hand-off: item %''s excluded reviewers can only be added to', NEW.id
      USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.lease_owner_id = ANY (NEW.excluded_reviewer_ids) THEN
    RAISE EXCEPTION 'hand-off: reviewer % may not lease item %: they took part earlier in its chain',
      NEW.lease_owner_id, NEW.id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER reviewitem_handoff_guard BEFORE UPDATE ON queue_app_reviewitem
  FOR EACH ROW
  WHEN (cardinality(OLD.excluded_reviewer_ids) > 0 OR cardinality(NEW.excluded_reviewer_ids) > 0)
  EXECUTE FUNCTION queue_app_item_handoff_guard();

-- Nor does anyone on it decide the item (overturns included). One primary-key read of the
-- item, which the decision's own fenced close has just locked; by its queue too, so that it
-- stays on the decision's shard when distributed by queue (the composite foreign key
-- decision_item_in_queue makes the pair exact).
CREATE FUNCTION queue_app_decision_handoff() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  excluded bigint[];
BEGIN
  SELECT i.excluded_reviewer_ids INTO excluded FROM queue_app_reviewitem AS i
   WHERE i.id = NEW.item_id AND i.queue_id = NEW.queue_id;
  IF NEW.reviewer_id = ANY (excluded) THEN
    RAISE EXCEPTION 'hand-off: reviewer % may not decide item %: they took part earlier in its chain',
      NEW.reviewer_id, NEW.item_id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER decision_handoff BEFORE INSERT ON queue_app_decision
  FOR EACH ROW EXECUTE FUNCTION queue_app_decision_handoff();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS decision_handoff ON queue_app_decision;
DROP FUNCTION IF EXISTS queue_app_decision_handoff();
DROP TRIGGER IF EXISTS reviewitem_handoff_guard ON queue_app_reviewitem;
DROP FUNCTION IF EXISTS queue_app_item_handoff_guard();
DROP TRIGGER IF EXISTS reviewitem_handoff_insert ON queue_app_reviewitem;
DROP FUNCTION IF EXISTS queue_app_item_handoff_insert();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("queue_app", "0014_attachments"),
    ]

    operations = [
        migrations.AddField(
            model_name="reviewitem",
            name="excluded_reviewer_ids",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.BigIntegerField(),
                blank=True,
                db_default=models.Value(
                    [],
                    output_field=django.contrib.postgres.fields.ArrayField(
                        base_field=models.BigIntegerField(), size=None
                    ),
                ),
                default=list,
                editable=False,
                size=None,
            ),
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
