"""Appeals (DSA Article 20): the affected person's complaint against a decision, and its notice.

An upstream platform forwards the complaint (POST /api/v1/appeals) with a reference of its own;
the appeal names the decision it answers (and that decision's statement of reasons, if it has
one) and becomes a task in its queue's appeals lane (LaneTask kind "appeal"), with its own
deadline. The task is decided like every lane task, fenced by its lease, and only by a person
with no part in the decision's chain (queue_app_appeal_barred, migration 0039): never the
maker, a checker, a QA reviewer, an earlier overturner or appeal decider, nor an API client.
What was decided is the task's LaneOutcome (upheld, overturned or closed); a reversal is an
overturn decision written through services.overturn_decision.

An appeal is never updated or deleted (the database refuses): what changes is its task. The
outcome notice to the affected person (AppealNotice) is an outbox row written with the outcome,
one per appeal, drained by the apply worker (queue_app/appeal_delivery.py).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

APPEAL_TEXT_MAX_LENGTH = 10_000
APPEAL_REFERENCE_MAX_LENGTH = 200
APPEAL_ATTACHMENTS_MAX = 10


class Appeal(models.Model):
    """One complaint, as received. Append-only; its work and outcome live on its lane task."""

    queue = models.ForeignKey("queue_app.Queue", on_delete=models.PROTECT, related_name="+")
    item = models.ForeignKey("queue_app.ReviewItem", on_delete=models.PROTECT, related_name="+")
    # The decision it answers (the one standing when it arrived) and that decision's statement.
    decision = models.ForeignKey(
        "queue_app.Decision", on_delete=models.PROTECT, related_name="appeals"
    )
    statement = models.ForeignKey(
        "queue_app.StatementOfReasons",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="appeals",
    )
    # Who forwarded it, and their reference: one appeal per client and reference (the
    # idempotency key); `request_sha256` is the hash of what was asked, so a replay with the
    # same body gets the same appeal and a different body is refused.
    client = models.ForeignKey("queue_app.ApiClient", on_delete=models.PROTECT, related_name="+")
    reference = models.CharField(max_length=APPEAL_REFERENCE_MAX_LENGTH)
    request_sha256 = models.CharField(max_length=64)
    text = models.TextField(max_length=APPEAL_TEXT_MAX_LENGTH)
    # Metadata references of the complainant's files, kept at the platform: name, content
    # type, size, sha256 and the platform's URL (never the bytes).
    attachments = models.JSONField(default=list, blank=True)
    received_at = models.DateTimeField()
    # When the appeal should be decided (the policy's appeal_decide_within after receipt), and
    # the last moment it could be filed (the policy's window after the statement or decision).
    due_at = models.DateTimeField()
    window_ends_at = models.DateTimeField()
    task = models.OneToOneField(
        "queue_app.LaneTask", on_delete=models.PROTECT, related_name="appeal"
    )

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["client", "reference"], name="appeal_reference_once"),
            models.CheckConstraint(
                condition=Q(request_sha256__regex=r"^[0-9a-f]{64}$"), name="appeal_sha256_hex"
            ),
            models.CheckConstraint(condition=~Q(text=""), name="appeal_has_text"),
            models.CheckConstraint(
                condition=Q(received_at__lte=models.F("window_ends_at")),
                name="appeal_within_window",
            ),
            models.CheckConstraint(
                condition=Q(due_at__gte=models.F("received_at")), name="appeal_due_after_receipt"
            ),
        ]
        indexes = [models.Index(fields=["queue", "received_at"], name="appeal_queue_received")]

    def __str__(self) -> str:
        return f"Appeal #{self.pk} of decision #{self.decision_id}"


class AppealNotice(models.Model):
    """Outbox row: the outcome of one appeal, to tell the affected person. One per appeal.

    Written in the transaction that finishes the appeal's task. A reversal's notice waits for
    its overturn to be applied (and for the notice of the overturn's own statement), so the
    platform hears "reversed" only once the reversal took effect.
    """

    appeal = models.OneToOneField(Appeal, on_delete=models.PROTECT, related_name="notice")
    created_at = models.DateTimeField(auto_now_add=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    last_error = models.TextField(blank=True)
    dead = models.BooleanField(default=False)
    done_at = models.DateTimeField(null=True, blank=True)
    receipt = models.JSONField(default=dict, blank=True)

    class Meta:
        verbose_name = "appeal outcome notice"
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                name="appealnotice_due",
                condition=Q(done_at__isnull=True, dead=False),
            ),
        ]

    def __str__(self) -> str:
        return f"Outcome notice of appeal #{self.appeal_id}"

    @property
    def status(self) -> str:
        if self.done_at:
            return "done"
        return "dead" if self.dead else "waiting"
