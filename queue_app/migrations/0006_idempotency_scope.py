"""Idempotency keys per client and intake queue; escalations linked to their decision.

Before this migration every idempotency key lived in one global namespace, shared by all API
clients and by the escalate effect's own keys (``escalation-of-decision-<id>``), which anyone
could claim first. After it:

- A key names an item only within (intake queue, API client): the unique constraint
  item_key_per_client_queue, NULLS NOT DISTINCT so items with no client (console, seeding,
  management commands, legacy rows) form one scope per queue as well.
- intake_queue is the queue the item was pushed into. queue moves on auto-escalation; the key's
  scope must not (a move would otherwise collide with, or free, a key). An INSERT that leaves it
  out gets queue_id (raw bulk loaders); an UPDATE may not change the scope columns.
- An escalation item names its escalate decision by escalated_by_decision (unique), and that
  decision must be one on the item it escalates from (composite foreign key). Escalation items
  carry no key.

Existing rows: every item keeps its key. Which API client pushed an old item was never
recorded (no column, no event, no actor on its 'created' event), so old items land in the
no-client scope of their intake queue; keys were globally unique, so the new constraint holds
for them at once. An old item's intake queue is its queue before its first auto-escalation
(that event records from_queue_id), else its queue. An old escalation item is linked to its
decision only if the escalate effect really made it: its key is escalation-of-decision-<id>,
it has escalated_from set (intake never sets it), and decision <id> is an escalate verdict on
that origin item. An item someone else planted under such a key matches none of that and is
left alone. Only queue_app_reviewitem is written; the append-only tables are read.
"""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models

BACKFILL_INTAKE_QUEUE = """
UPDATE queue_app_reviewitem AS i
   SET intake_queue_id = coalesce(
         (SELECT (e.detail ->> 'from_queue_id')::bigint
            FROM queue_app_itemevent AS e
           WHERE e.item_id = i.id AND e.kind = 'auto_escalated'
             AND e.detail ->> 'from_queue_id' ~ '^[0-9]{1,18}$'
             AND EXISTS (SELECT 1 FROM queue_app_queue AS q
                          WHERE q.id = (e.detail ->> 'from_queue_id')::bigint)
           ORDER BY e.at, e.id
           LIMIT 1),
         i.queue_id);
"""
# The UPDATEs above write foreign-key columns, queueing deferred checks; the schema changes
# that follow (ALTER TABLE, CREATE INDEX) refuse to run over pending trigger events. Run the
# checks now, then defer again as Django's constraints are by default.
CHECK_NOW = """
SET CONSTRAINTS ALL IMMEDIATE;
SET CONSTRAINTS ALL DEFERRED;
"""

LINK_OLD_ESCALATIONS = """
UPDATE queue_app_reviewitem AS i
   SET escalated_by_decision_id = d.id
  FROM queue_app_decision AS d
 WHERE i.idempotency_key ~ '^escalation-of-decision-[0-9]{1,18}$'
   AND d.id = substring(i.idempotency_key FROM '^escalation-of-decision-([0-9]{1,18})$')::bigint
   AND d.item_id = i.escalated_from_id  -- NULL for intake items: never matches
   AND d.verdict = 'escalate';
"""

SCOPE_RULES = """
ALTER TABLE queue_app_reviewitem
  ADD CONSTRAINT item_escalation_decision_on_origin
      FOREIGN KEY (escalated_by_decision_id, escalated_from_id)
      REFERENCES queue_app_decision (id, item_id);

-- An item's key scope is a fact about the request that made it. A raw loader that leaves
-- intake_queue_id out gets the queue it inserts into; afterwards the scope and the escalation
-- link never change. Both triggers are filtered by WHEN (and UPDATE OF), so claims, renewals
-- and decisions, which touch none of these columns, never call a function.
CREATE FUNCTION queue_app_item_intake_queue_default() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.intake_queue_id := NEW.queue_id;
  RETURN NEW;
END;
$$;

CREATE TRIGGER item_intake_queue_default BEFORE INSERT ON queue_app_reviewitem
  FOR EACH ROW WHEN (NEW.intake_queue_id IS NULL)
  EXECUTE FUNCTION queue_app_item_intake_queue_default();

CREATE FUNCTION queue_app_item_refuse_scope_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'an item''s idempotency scope and escalation link never change'
    USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER item_key_scope_fixed
  BEFORE UPDATE OF idempotency_key, intake_queue_id, created_by_client_id,
                   escalated_by_decision_id
  ON queue_app_reviewitem
  FOR EACH ROW
  WHEN ((NEW.idempotency_key, NEW.intake_queue_id, NEW.created_by_client_id,
         NEW.escalated_by_decision_id)
        IS DISTINCT FROM
        (OLD.idempotency_key, OLD.intake_queue_id, OLD.created_by_client_id,
         OLD.escalated_by_decision_id))
  EXECUTE FUNCTION queue_app_item_refuse_scope_change();
"""

DROP_SCOPE_RULES = """
DROP TRIGGER item_key_scope_fixed ON queue_app_reviewitem;
DROP FUNCTION queue_app_item_refuse_scope_change();
DROP TRIGGER item_intake_queue_default ON queue_app_reviewitem;
DROP FUNCTION queue_app_item_intake_queue_default();
ALTER TABLE queue_app_reviewitem DROP CONSTRAINT item_escalation_decision_on_origin;
"""


class Migration(migrations.Migration):
    dependencies = [("queue_app", "0005_effect_order")]

    operations = [
        migrations.AddField(
            model_name="reviewitem",
            name="created_by_client",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="queue_app.apiclient",
            ),
        ),
        migrations.AddField(
            model_name="reviewitem",
            name="escalated_by_decision",
            field=models.OneToOneField(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="escalation_item",
                to="queue_app.decision",
            ),
        ),
        migrations.AddField(
            model_name="reviewitem",
            name="intake_queue",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="queue_app.queue",
            ),
        ),
        migrations.RunSQL(BACKFILL_INTAKE_QUEUE + CHECK_NOW, migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="reviewitem",
            name="intake_queue",
            field=models.ForeignKey(
                blank=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="queue_app.queue",
            ),
        ),
        migrations.AlterField(
            model_name="reviewitem",
            name="idempotency_key",
            field=models.CharField(blank=True, max_length=200, null=True),
        ),
        migrations.RunSQL(LINK_OLD_ESCALATIONS + CHECK_NOW, migrations.RunSQL.noop),
        migrations.AddConstraint(
            model_name="reviewitem",
            constraint=models.UniqueConstraint(
                condition=models.Q(("idempotency_key__isnull", False)),
                fields=("idempotency_key", "intake_queue", "created_by_client"),
                name="item_key_per_client_queue",
                nulls_distinct=False,
            ),
        ),
        migrations.AddConstraint(
            model_name="reviewitem",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("idempotency_key__isnull", False),
                    ("escalated_by_decision__isnull", False),
                    _connector="OR",
                ),
                name="item_key_or_escalation",
            ),
        ),
        migrations.AddConstraint(
            model_name="reviewitem",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("escalated_by_decision__isnull", True),
                    ("escalated_from__isnull", False),
                    _connector="OR",
                ),
                name="item_escalation_names_origin",
            ),
        ),
        migrations.RunSQL(SCOPE_RULES, DROP_SCOPE_RULES),
    ]
