"""A returned overturn no longer blocks the next correction of the decision it named.

An overturn the check policy covers waits for a checker, who may return it: it then stays in
the log and never takes effect. A unique supersedes column made that the decision's last
correction. The column is now a plain foreign key, and a trigger keeps what the unique key
kept for the overturns that count: at most one overturn of a decision in force or awaiting
its check at a time, under the item's row lock, so two admins overturning at once still get
one row and one refusal.

An adjudication whose decision an overturn in force replaced since its QA draw can change
nothing any more: upholding would say the decision stands, overturning would write a second
correction of it. Such an adjudication is closed (a new result, closed), and only such a one.
"""

from django.db import migrations, models

FORWARD = """
-- Not a unique index: whether an overturn was returned is its check's outcome, in another
-- table. Overturns of an item take turns on the item's row lock (decision_separation and
-- services.overturn_decision take it too, four eyes an advisory lock of the item; a check's
-- finish takes the row lock in LOCK_LANE_TASK), so the read below sees every committed
-- overturn and return of the item. Taken here too, so the rule leans on no other's lock.
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

-- An adjudication is closed exactly when an overturn in force (the item's story,
-- queue_app_decisionstatus) has replaced its decision; while the decision stands it is upheld
-- or overturned. Read under the item's lock, which overturns (FOR UPDATE) and lane finishes
-- (LOCK_LANE_TASK) take too, so no overturn or check confirmation slips in between. The kind
-- is read from the task, not from what the writer sent.
CREATE FUNCTION queue_app_laneoutcome_adjudication_stands() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  t queue_app_lanetask;
  replaced boolean;
BEGIN
  SELECT * INTO t FROM queue_app_lanetask WHERE id = NEW.task_id;
  IF t.kind IS DISTINCT FROM 'adjudication' THEN
    RETURN NEW;
  END IF;
  PERFORM 1 FROM queue_app_reviewitem WHERE id = t.item_id FOR KEY SHARE;
  -- An overturn in force, as the story's status says; an adjudication that overturns names
  -- its own, written just before in its transaction.
  replaced := EXISTS (
      SELECT 1
        FROM queue_app_decision AS o
        JOIN queue_app_decisionstatus AS os ON os.decision_id = o.id
       WHERE o.supersedes_id = t.decision_id
         AND os.status NOT IN ('awaiting_check', 'returned')
         AND o.id IS DISTINCT FROM NEW.overturn_id);
  IF NEW.result = 'closed' AND NOT replaced THEN
    RAISE EXCEPTION 'adjudication: decision % still stands; uphold or overturn it',
                    t.decision_id
      USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.result IN ('upheld', 'overturned') AND replaced THEN
    RAISE EXCEPTION 'adjudication: decision % no longer stands; the adjudication is closed',
                    t.decision_id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END;
$$;

CREATE TRIGGER laneoutcome_adjudication_stands BEFORE INSERT ON queue_app_laneoutcome
  FOR EACH ROW EXECUTE FUNCTION queue_app_laneoutcome_adjudication_stands();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS laneoutcome_adjudication_stands ON queue_app_laneoutcome;
DROP FUNCTION IF EXISTS queue_app_laneoutcome_adjudication_stands();
DROP TRIGGER IF EXISTS decision_one_overturn ON queue_app_decision;
DROP FUNCTION IF EXISTS queue_app_decision_one_overturn();
"""


class Migration(migrations.Migration):
    dependencies = [("queue_app", "0030_escalation_files_and_deadline_range")]

    operations = [
        migrations.RemoveConstraint(
            model_name="laneoutcome",
            name="laneoutcome_result_fits_kind",
        ),
        migrations.AlterField(
            model_name="laneoutcome",
            name="result",
            field=models.CharField(
                choices=[
                    ("confirmed", "Confirmed"),
                    ("returned", "Returned"),
                    ("reviewed", "QA reviewed"),
                    ("upheld", "Upheld"),
                    ("overturned", "Overturned"),
                    ("closed", "Closed: its decision no longer stood"),
                ],
                max_length=16,
            ),
        ),
        migrations.AddConstraint(
            model_name="laneoutcome",
            constraint=models.CheckConstraint(
                condition=models.Q(kind="check", result__in=["confirmed", "returned"])
                | models.Q(kind="qa", result="reviewed")
                | models.Q(kind="adjudication", result__in=["upheld", "overturned", "closed"]),
                name="laneoutcome_result_fits_kind",
            ),
        ),
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
