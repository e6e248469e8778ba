"""One story of an item: each decision's status and the item's standing outcome.

Every surface that says whether a decision stands (the console's item page and same-subject
table, the admin, the API's item and list, My work, the exports) reads it from two database
views, defined here and created by a migration, rather than working it out on its own:

- ``queue_app_decisionstatus``: one row per decision, its ``status`` and whether it ``stands``;
- ``queue_app_itemstory``: one row per item, its state and the decision that stands (the
  newest decision whose status stands), with that decision's verdict as the standing outcome.

Views rather than a Python function, because several surfaces read lists of items or
decisions in one SQL statement (the subject list, My work's counts, the export), and a rule
written once in SQL is the only one all of them can share.
"""

from __future__ import annotations

from django.db import models


class DecisionStatus(models.TextChoices):
    """What became of a decision, in the order the view tests it (the first that holds wins)."""

    # Its check is open: no effect yet, and it does not stand.
    AWAITING_CHECK = "awaiting_check", "awaiting its check"
    # The checker returned it: it never takes effect; the item's next round decides again.
    RETURNED = "returned", "returned by the checker"
    # An overturn that takes effect replaced it (a reviewer's verdict)...
    OVERTURNED = "overturned", "overturned"
    # ...or replaced an earlier overturn.
    SUPERSEDED = "superseded", "superseded by a later overturn"
    # Standing from here on. An escalate verdict hands the item on to the escalation queue.
    ESCALATED = "escalated", "escalated"
    APPLIED = "applied", "applied"
    # Confirmed by its checker; the apply worker has not carried it out yet.
    CONFIRMED = "confirmed", "confirmed by the checker"
    # Needed no check; the apply worker has not carried it out yet.
    PENDING = "pending", "effect pending"


# The status, first match wins. A decision has at most one check task (lanetask_one_per_kind),
# joined with its outcome by key, so a decision's status costs index probes whatever the size
# of the lanes. A check with no outcome holds its decision back; a returned one ends it. An
# overturn replaces what it names once it takes effect: one the check policy covers waits for
# its check, and until a checker confirms it the decision it names still stands.
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

# The newest standing decision is the one that stands: a returned round's decision and the
# decisions an overturn replaced never do, and an overturn is newer than what it replaces.
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


class DecisionStory(models.Model):
    """A row of queue_app_decisionstatus: what became of one decision (read only)."""

    decision = models.OneToOneField(
        "queue_app.Decision",
        primary_key=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="story",
    )
    item = models.ForeignKey(
        "queue_app.ReviewItem", on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    outcome = models.CharField(max_length=16)
    status = models.CharField(max_length=16, choices=DecisionStatus.choices)
    stands = models.BooleanField()

    class Meta:
        managed = False
        db_table = "queue_app_decisionstatus"

    def __str__(self) -> str:
        return f"Decision #{self.decision_id}: {self.status}"


class ItemStory(models.Model):
    """A row of queue_app_itemstory: an item's state and the decision that stands (read only)."""

    item = models.OneToOneField(
        "queue_app.ReviewItem",
        primary_key=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="story",
    )
    state = models.CharField(max_length=16)
    standing_decision = models.ForeignKey(
        "queue_app.Decision",
        null=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    standing_outcome = models.CharField(max_length=16, null=True)  # noqa: DJ001

    class Meta:
        managed = False
        db_table = "queue_app_itemstory"

    def __str__(self) -> str:
        return f"Item #{self.item_id}: {self.state}, {self.standing_outcome or 'undecided'}"


def fresh_status(*, verdict: str, awaiting_check: bool) -> DecisionStatus:
    """Return the status of a decision the caller's own transaction has just inserted.

    Nothing can have happened to it yet (no check outcome, no overturn, no effect), so of the
    view's cases only these can hold; the answer to a write need not read the row back.
    """
    if awaiting_check:
        return DecisionStatus.AWAITING_CHECK
    if verdict == "escalate":
        return DecisionStatus.ESCALATED
    return DecisionStatus.PENDING
