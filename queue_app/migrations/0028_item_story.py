"""One story of an item: the views every surface reads a decision's status and standing from.

queue_app_decisionstatus (per decision) and queue_app_itemstory (per item) are defined in
queue_app/story.py. The SQL is copied here, not imported, so this migration keeps creating
what it created when the module changes; a later change replaces the views in a migration of
its own.
"""

import django.db.models.deletion
from django.db import migrations, models

DECISION_STATUS_VIEW = """
CREATE VIEW queue_app_decisionstatus AS
SELECT d.id AS decision_id, d.item_id,
       coalesce(d.corrected_verdict, d.verdict) AS outcome,
       s.status,
       s.status IN ('escalated', 'applied', 'confirmed', 'pending') AS stands
  FROM queue_app_decision AS d
  LEFT JOIN queue_app_lanetask AS t ON t.decision_id = d.id AND t.kind = 'check'
  LEFT JOIN queue_app_laneoutcome AS o ON o.task_id = t.id
 CROSS JOIN LATERAL (
        SELECT CASE
          WHEN t.id IS NOT NULL AND o.task_id IS NULL THEN 'awaiting_check'
          WHEN o.result = 'returned' THEN 'returned'
          WHEN EXISTS (
                SELECT 1 FROM queue_app_decision AS later
                 WHERE later.supersedes_id = d.id
                   AND NOT EXISTS (
                        SELECT 1 FROM queue_app_lanetask AS lt
                          LEFT JOIN queue_app_laneoutcome AS lo ON lo.task_id = lt.id
                         WHERE lt.decision_id = later.id AND lt.kind = 'check'
                           AND lo.result IS DISTINCT FROM 'confirmed'))
            THEN CASE WHEN d.verdict = 'overturn' THEN 'superseded' ELSE 'overturned' END
          WHEN d.verdict = 'escalate' THEN 'escalated'
          WHEN EXISTS (SELECT 1 FROM queue_app_applieddecision AS a WHERE a.decision_id = d.id)
            THEN 'applied'
          WHEN o.result = 'confirmed' THEN 'confirmed'
          ELSE 'pending'
        END AS status
        -- OFFSET 0 keeps the CASE a subquery evaluated once per decision: pulled up, it
        -- would be evaluated again for stands.
        OFFSET 0
       ) AS s
"""

ITEM_STORY_VIEW = """
CREATE VIEW queue_app_itemstory AS
SELECT i.id AS item_id, i.state,
       st.decision_id AS standing_decision_id, st.outcome AS standing_outcome
  FROM queue_app_reviewitem AS i
  LEFT JOIN LATERAL (
        SELECT s.decision_id, s.outcome
          FROM queue_app_decisionstatus AS s
         WHERE s.item_id = i.id AND s.stands
         ORDER BY s.decision_id DESC
         LIMIT 1
       ) AS st ON true
"""

DROP_VIEWS = """
DROP VIEW IF EXISTS queue_app_itemstory;
DROP VIEW IF EXISTS queue_app_decisionstatus;
"""


class Migration(migrations.Migration):
    dependencies = [("queue_app", "0027_sign_on_links_and_history_no_truncate")]

    operations = [
        migrations.CreateModel(
            name="DecisionStory",
            fields=[
                (
                    "decision",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        primary_key=True,
                        related_name="story",
                        serialize=False,
                        to="queue_app.decision",
                    ),
                ),
                ("outcome", models.CharField(max_length=16)),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("awaiting_check", "awaiting its check"),
                            ("returned", "returned by the checker"),
                            ("overturned", "overturned"),
                            ("superseded", "superseded by a later overturn"),
                            ("escalated", "escalated"),
                            ("applied", "applied"),
                            ("confirmed", "confirmed by the checker"),
                            ("pending", "effect pending"),
                        ],
                        max_length=16,
                    ),
                ),
                ("stands", models.BooleanField()),
            ],
            options={"db_table": "queue_app_decisionstatus", "managed": False},
        ),
        migrations.CreateModel(
            name="ItemStory",
            fields=[
                (
                    "item",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        primary_key=True,
                        related_name="story",
                        serialize=False,
                        to="queue_app.reviewitem",
                    ),
                ),
                ("state", models.CharField(max_length=16)),
                ("standing_outcome", models.CharField(max_length=16, null=True)),
            ],
            options={"db_table": "queue_app_itemstory", "managed": False},
        ),
        migrations.RunSQL(DECISION_STATUS_VIEW + ";" + ITEM_STORY_VIEW, DROP_VIEWS, elidable=False),
    ]
