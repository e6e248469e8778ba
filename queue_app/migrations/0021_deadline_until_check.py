"""An item's deadline runs until its outcome is final: for a decision that needs a check, until
the checker confirms it.

Until now a confirmed item kept the maker's time as decided_at, and an item awaiting its check
was counted neither as open work nor as breached: a check left waiting past the deadline was
invisible to /ops/, doctor and the console. From here on CONFIRM_CHECK sets decided_at to the
confirmation's time. This migration gives the items confirmed before it the same meaning, from
their check's outcome (the outcome rows and the decisions are not touched; the maker's time
stays on the decision). Reversing it puts the maker's time back.

A check now also carries its item's deadline (queue_app_lanetask.due_at, copied when the check
is queued), so Next check serves the most urgent check first, as Next item does; the open
checks queued before this migration get theirs here. Migration 0022 builds the indexes.
"""

from django.db import migrations, models

# Each item confirmed by a check, with the confirmation's time and the maker's decision time.
# One confirmed check per item at most (a confirmed item is decided and never leased again);
# max() keeps the statement exact whatever.
CONFIRMED = """
SELECT t.item_id, max(o.created_at) AS confirmed_at, max(d.created_at) AS made_at
  FROM queue_app_lanetask AS t
  JOIN queue_app_laneoutcome AS o ON o.task_id = t.id
  JOIN queue_app_decision AS d ON d.id = t.decision_id
 WHERE t.kind = 'check' AND o.result = 'confirmed'
 GROUP BY t.item_id
"""

# Decided at the confirmation (forward) or, as before, at the maker's decision (backward).
DATE_CONFIRMED_ITEMS = """
UPDATE queue_app_reviewitem AS i
   SET decided_at = c.{column}
  FROM ({confirmed}) AS c
 WHERE i.id = c.item_id AND i.state = 'decided' AND i.decided_at IS DISTINCT FROM c.{column}
"""
FORWARD = DATE_CONFIRMED_ITEMS.format(column="confirmed_at", confirmed=CONFIRMED)
BACKWARD = DATE_CONFIRMED_ITEMS.format(column="made_at", confirmed=CONFIRMED)


# Open checks queued before this migration: their item's deadline (it cannot move while the
# item awaits its check). Done tasks are never claimed again and keep NULL.
CHECK_DEADLINES = """
UPDATE queue_app_lanetask AS t
   SET due_at = i.due_at
  FROM queue_app_reviewitem AS i
 WHERE i.id = t.item_id AND t.kind = 'check' AND t.state = 'open' AND i.due_at IS NOT NULL
"""


class Migration(migrations.Migration):
    dependencies = [("queue_app", "0020_seal_lane_outcomes")]

    operations = [
        migrations.RunSQL(FORWARD, BACKWARD),
        migrations.AddField(
            model_name="lanetask",
            name="due_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunSQL(CHECK_DEADLINES, migrations.RunSQL.noop),
    ]
