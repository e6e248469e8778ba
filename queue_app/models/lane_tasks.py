"""Second-person controls: maker-checker policies, lane tasks and their outcomes.

One mechanism serves every piece of work a second person must do on a decision: a *lane task*
(kind check, qa or adjudication) in its queue, claimed with SKIP LOCKED and fenced by a lease
token exactly like a review item (db/statements/lanes.py). What the second person concluded
is a *lane outcome*, append-only like decisions. The database rules:

- a task is tied to its decision's item, queue and maker by a composite foreign key;
- nobody whose principal (queue_app_principal: an API client's service user counts as the
  admin who created the client) is the maker's, or for an adjudication the QA reviewer's,
  may hold the task's lease or write its outcome;
- an outcome names the task's lease holder and lease token (composite foreign key: the fence);
- one outcome per task (its primary key is the task), so a confirmation racing a return
  leaves exactly one;
- outcomes are never updated or deleted; a task's identity columns never change, and a done
  task never changes at all.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q


class LaneKind(models.TextChoices):
    CHECK = "check", "Check"
    QA = "qa", "QA"
    ADJUDICATION = "adjudication", "Adjudication"
    # The affected person's complaint against a decision (DSA Article 20): models/appeals.py.
    APPEAL = "appeal", "Appeal"


class LaneState(models.TextChoices):
    OPEN = "open", "Open"
    DONE = "done", "Done"


class LaneResult(models.TextChoices):
    CONFIRMED = "confirmed", "Confirmed"
    RETURNED = "returned", "Returned"
    REVIEWED = "reviewed", "QA reviewed"
    UPHELD = "upheld", "Upheld"
    OVERTURNED = "overturned", "Overturned"
    # An adjudication whose decision an overturn replaced since its QA draw: nothing it
    # could write would change the outcome, so it is closed (laneoutcome_adjudication_stands).
    CLOSED = "closed", "Closed: its decision no longer stood"


# Which results each kind of task may end with (a check constraint says the same).
RESULTS_BY_KIND = {
    LaneKind.CHECK: (LaneResult.CONFIRMED, LaneResult.RETURNED),
    LaneKind.QA: (LaneResult.REVIEWED,),
    LaneKind.ADJUDICATION: (LaneResult.UPHELD, LaneResult.OVERTURNED, LaneResult.CLOSED),
    # An appeal upheld (the decision stands), reversed (an overturn names the corrected
    # verdict), or closed because an overturn replaced its decision while it waited.
    LaneKind.APPEAL: (LaneResult.UPHELD, LaneResult.OVERTURNED, LaneResult.CLOSED),
}

CHECK_POLICY_VERDICTS = [("approve", "Approve"), ("reject", "Reject"), ("escalate", "Escalate")]


class CheckPolicy(models.Model):
    """When a queue's decisions of one verdict need a checker before their effect runs.

    No path: always. A path: when the payload's number at that dotted path is at or above the
    threshold, compared exactly as Decimal (numbers reach Python as Decimal through the
    project's exact JSON decoding). A missing or non-numeric value needs a check too: a policy
    fails safe, it never lets a decision through because the evidence was malformed.
    """

    queue = models.ForeignKey(
        "queue_app.Queue", on_delete=models.CASCADE, related_name="check_policies"
    )
    verdict = models.CharField(max_length=16, choices=CHECK_POLICY_VERDICTS)
    path = models.CharField(
        max_length=200,
        blank=True,
        help_text="Dotted path to a number in the payload (e.g. variance_amount); empty: always.",
    )
    threshold = models.DecimalField(
        max_digits=40,
        decimal_places=10,
        null=True,
        blank=True,
        help_text="Needs a check when the number is at or above this (exact).",
    )
    machine_only = models.BooleanField(
        "automatic decisions only",
        default=False,
        db_default=False,
        help_text=(
            "Apply this policy only to the machine's automatic decisions (a person confirms "
            "them), not to decisions people make."
        ),
    )

    class Meta:
        ordering = ["queue", "verdict", "path"]
        verbose_name = "check policy"
        verbose_name_plural = "check policies"
        constraints = [
            models.CheckConstraint(
                condition=Q(verdict__in=[v for v, _ in CHECK_POLICY_VERDICTS]),
                name="checkpolicy_verdict_valid",
            ),
            # A path comes with a threshold, and "always" with neither.
            models.CheckConstraint(
                condition=Q(path="", threshold__isnull=True)
                | (~Q(path="") & Q(threshold__isnull=False)),
                name="checkpolicy_path_and_threshold",
            ),
            models.UniqueConstraint(
                fields=["queue", "verdict", "path", "machine_only"],
                name="checkpolicy_unique_per_path",
            ),
        ]

    def __str__(self) -> str:
        if not self.path:
            text = f"{self.verdict}: always checked"
        else:
            text = f"{self.verdict}: checked when {self.path} ≥ {self.threshold}"
        return f"{text} (automatic decisions)" if self.machine_only else text

    def clean(self) -> None:
        if self.path and self.threshold is None:
            raise ValidationError({"threshold": "A path needs a threshold."})
        if not self.path and self.threshold is not None:
            raise ValidationError({"path": "A threshold needs the path of the number it tests."})


class LaneTask(models.Model):
    """Work a second person must do on one decision: check it, QA it, or adjudicate a QA.

    Claimed like an item (lanes_sql.CLAIM_LANE_TASK): an open task whose lease is absent or
    expired, the earliest deadline first (then the oldest), under FOR UPDATE SKIP LOCKED,
    stamped with a new random token.
    """

    kind = models.CharField(max_length=16, choices=LaneKind.choices)
    queue = models.ForeignKey("queue_app.Queue", on_delete=models.PROTECT, related_name="+")
    item = models.ForeignKey(
        "queue_app.ReviewItem", on_delete=models.PROTECT, related_name="lane_tasks"
    )
    decision = models.ForeignKey(
        "queue_app.Decision", on_delete=models.PROTECT, related_name="lane_tasks"
    )
    # The decision's reviewer (the composite foreign key lanetask_matches_decision checks it),
    # and the principal they act for, filled by the insert trigger: the claim skips tasks whose
    # principal is the claimer's without a function call per row.
    maker = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    maker_principal_id = models.BigIntegerField(editable=False, null=True)
    # Adjudication only: the QA task that disagreed, and its reviewer (also barred).
    source = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="adjudication"
    )
    second = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    second_principal_id = models.BigIntegerField(editable=False, null=True)
    # QA and adjudication only: the principal of the checker who confirmed the decision,
    # filled by the insert trigger (also barred: separation of duties), so the claim skips
    # the checker's tasks without a function call per row.
    checker_principal_id = models.BigIntegerField(editable=False, null=True)
    state = models.CharField(max_length=8, choices=LaneState.choices, default=LaneState.OPEN)
    lease_owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    lease_token = models.UUIDField(null=True, blank=True)
    lease_expires = models.DateTimeField(null=True, blank=True)
    lease_count = models.PositiveIntegerField(default=0)
    # A check's item deadline, copied when the check is queued (decisions_sql.INSERT_DECISION): the
    # deadline runs until the check confirms the decision, so Next check takes the most urgent
    # first. Exact, not a cache: only a hold moves due_at (it starts on a leased item, and
    # replacing a held item's evidence gives back the unused part), and an item awaiting its
    # check is neither leased nor held; its evidence may still be replaced, which leaves due_at
    # alone. NULL for QA and adjudication (their item is final) and for items without a
    # deadline: those come after, oldest first.
    due_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            # The claim's walk: open tasks of one lane, the earliest deadline first (none
            # last), then the oldest. Done tasks (nearly all of them, in time) are not in it,
            # so a claim's cost does not grow with history.
            models.Index(
                fields=["queue", "kind", "due_at", "created_at", "id"],
                name="lanetask_open_due_claim",
                condition=Q(state="open"),
            ),
            # A checker's own live lease, found by Next check in a second tab.
            models.Index(
                fields=["lease_owner", "queue", "kind"],
                name="lanetask_open_owner",
                condition=Q(state="open", lease_owner__isnull=False),
            ),
            models.Index(fields=["item"], name="lanetask_item"),
            # The checks of one maker's decisions by time: which of a reviewer's decisions in a
            # window a check holds back or returned (My work), without reading the window.
            models.Index(
                fields=["maker", "created_at"],
                name="lanetask_check_maker",
                condition=Q(kind="check"),
            ),
            # One reviewer's QA reviews finished in a window (My work's agreement), without
            # reading every QA review of the window: a QA task is done when its outcome is
            # written, in the one statement (done_at is the outcome's created_at).
            models.Index(
                fields=["maker", "done_at"],
                name="lanetask_qa_maker",
                condition=Q(kind="qa"),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=[k.value for k in LaneKind]), name="lanetask_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(state__in=[s.value for s in LaneState]), name="lanetask_state_valid"
            ),
            models.CheckConstraint(
                condition=Q(state="done", done_at__isnull=False)
                | Q(state="open", done_at__isnull=True),
                name="lanetask_done_at_matches_state",
            ),
            # A lease names its holder, fence and expiry together; a done task keeps the
            # lease it was finished under (its outcome names the same).
            models.CheckConstraint(
                condition=Q(
                    lease_owner__isnull=False,
                    lease_token__isnull=False,
                    lease_expires__isnull=False,
                )
                | Q(lease_owner__isnull=True, lease_token__isnull=True, lease_expires__isnull=True),
                name="lanetask_lease_columns_together",
            ),
            models.CheckConstraint(
                condition=Q(state="open") | Q(lease_owner__isnull=False),
                name="lanetask_done_under_a_lease",
            ),
            # An adjudication names the QA task that disagreed and its reviewer; nothing else
            # names either.
            models.CheckConstraint(
                condition=Q(kind="adjudication", source__isnull=False, second__isnull=False)
                | (~Q(kind="adjudication") & Q(source__isnull=True, second__isnull=True)),
                name="lanetask_adjudication_source",
            ),
            # One task of each kind per decision: a re-run cannot queue the same work twice.
            models.UniqueConstraint(fields=["decision", "kind"], name="lanetask_one_per_kind"),
            # Targets of the fence foreign keys (an outcome names holder and token; an
            # adjudication names the QA task's holder).
            models.UniqueConstraint(fields=["id", "lease_owner"], name="lanetask_id_owner"),
            models.UniqueConstraint(
                fields=["id", "lease_owner", "lease_token"], name="lanetask_id_owner_token"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} of decision #{self.decision_id}"


class LaneOutcome(models.Model):
    """What the second person concluded. Append-only; exactly one per task."""

    task = models.OneToOneField(
        LaneTask, primary_key=True, on_delete=models.PROTECT, related_name="outcome"
    )
    kind = models.CharField(max_length=16, choices=LaneKind.choices)
    result = models.CharField(max_length=16, choices=LaneResult.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    # As named when they acted (set by the insert trigger, like Decision.reviewer_username).
    actor_username = models.CharField(max_length=150, blank=True, editable=False)
    lease_token = models.UUIDField()
    # QA: the second reviewer's own verdict and reason, and whether they agree with the
    # sampled decision's (computed by the insert trigger from the decision row).
    verdict = models.CharField(max_length=16, blank=True)
    reason_code = models.ForeignKey(
        "queue_app.ReasonCode", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    agrees_verdict = models.BooleanField(null=True, editable=False)
    agrees_reason = models.BooleanField(null=True, editable=False)
    note = models.TextField(blank=True)
    # Adjudication ending in an overturn: the overturn decision it wrote.
    overturn = models.OneToOneField(
        "queue_app.Decision",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="adjudication",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["kind", "created_at"], name="laneoutcome_kind_at")]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="check", result__in=["confirmed", "returned"])
                | Q(kind="qa", result="reviewed")
                | Q(kind="adjudication", result__in=["upheld", "overturned", "closed"])
                | Q(kind="appeal", result__in=["upheld", "overturned", "closed"]),
                name="laneoutcome_result_fits_kind",
            ),
            # An appeal's outcome gives its reasons: the affected person's notice quotes them.
            models.CheckConstraint(
                condition=~Q(kind="appeal") | ~Q(note=""),
                name="laneoutcome_appeal_has_reasons",
            ),
            # A return says why: the maker reads it before deciding again.
            models.CheckConstraint(
                condition=~Q(result="returned") | ~Q(note=""),
                name="laneoutcome_return_has_note",
            ),
            models.CheckConstraint(
                condition=~Q(result="reviewed") | (~Q(verdict="") & Q(reason_code__isnull=False)),
                name="laneoutcome_qa_has_verdict",
            ),
            models.CheckConstraint(
                condition=Q(result="overturned", overturn__isnull=False)
                | (~Q(result="overturned") & Q(overturn__isnull=True)),
                name="laneoutcome_overturn_names_decision",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_result_display()} ({self.task})"
