"""A returned overturn no longer blocks the next correction of the decision it named.

An overturn the check policy covers waits for a checker, who may return it: it then stays in
the log and never takes effect. A unique supersedes column made that the decision's last
correction. The column is now a plain foreign key, and a trigger keeps what the unique key
kept for the overturns that count: at most one overturn of a decision in force or awaiting
its check at a time, under the item's row lock, so two admins overturning at once still get
one row and one refusal.
"""

from django.db import migrations, models

FORWARD = """
-- Not a unique index: whether an overturn was returned is its check's outcome, in another
-- table. Overturns of an item take turns on the item's row lock (the decision_separation
-- trigger and services.overturn_decision take it too, and a check's finish takes it in
-- LOCK_LANE_TASK), so the read below sees every committed overturn and return of the item.
CREATE FUNCTION queue_app_decision_one_overturn() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  other bigint;
BEGIN
  PERFORM 1 FROM queue_app_reviewitem WHERE id = NEW.item_id FOR UPDATE;
  SELECT o.id INTO other
    FROM queue_app_decision AS o
   WHERE o.supersedes_id = NEW.supersedes_id
     AND NOT EXISTS (SELECT 1
                       FROM queue_app_lanetask AS t
                       JOIN queue_app_laneoutcome AS lo ON lo.task_id = t.id
                      WHERE t.decision_id = o.id AND t.kind = 'check'
                        AND lo.result = 'returned')
   LIMIT 1;
  IF other IS NOT NULL THEN
    RAISE EXCEPTION 'supersedes: decision % already has overturn %, in force or awaiting its '
                    'check', NEW.supersedes_id, other
      USING ERRCODE = 'unique_violation';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER decision_one_overturn BEFORE INSERT ON queue_app_decision
  FOR EACH ROW WHEN (NEW.verdict = 'overturn')
  EXECUTE FUNCTION queue_app_decision_one_overturn();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS decision_one_overturn ON queue_app_decision;
DROP FUNCTION IF EXISTS queue_app_decision_one_overturn();
"""


class Migration(migrations.Migration):
    dependencies = [("queue_app", "0030_escalation_files_and_deadline_range")]

    operations = [
        migrations.RunSQL(FORWARD, BACKWARD),
        # Reversing fails while a decision has a returned overturn and a later one: the
        # unique key cannot hold them both.
        migrations.AlterField(
            model_name="decision",
            name="supersedes",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=models.deletion.PROTECT,
                related_name="overturns",
                to="queue_app.decision",
            ),
        ),
    ]
