"""Review Console's data model.

Queue state (ReviewItem.state and the lease columns) is derived working state; decisions are
the facts. Rules that must hold whatever code writes the rows live in the database: check
constraints here, and the composite foreign keys and append-only triggers in migration 0002.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import Group
from django.contrib.postgres.indexes import BrinIndex
from django.db import models
from django.db.models import Q

from queue_app.jsonutil import ExactDecoder, ExactEncoder
from queue_app.managers import DecisionManager, ReviewItemManager


class Verdict(models.TextChoices):
    APPROVE = "approve", "Approve"
    REJECT = "reject", "Reject"
    ESCALATE = "escalate", "Escalate"
    OVERTURN = "overturn", "Overturn"


# The verdicts a reviewer picks; overturn is only ever written by an admin through the service.
REVIEW_VERDICTS = (Verdict.APPROVE, Verdict.REJECT, Verdict.ESCALATE)
# What an overturn can leave standing.
CORRECTED_VERDICTS = (Verdict.APPROVE, Verdict.REJECT)


class ItemState(models.TextChoices):
    PENDING = "pending", "Pending"
    LEASED = "leased", "Leased"
    DECIDED = "decided", "Decided"


class Queue(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    lease_ttl = models.DurationField(
        default=timedelta(minutes=10),
        help_text="How long an item stays with a reviewer before anyone else may take it.",
    )
    escalation_threshold = models.PositiveIntegerField(
        default=3,
        help_text="Leases without a decision after which an item moves to the escalation queue.",
    )
    escalation_queue = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="escalates_from"
    )
    effect = models.CharField(
        max_length=200,
        default="log",
        help_text="Effect handler run by the apply worker: log, webhook, or a dotted path.",
    )
    webhook_url = models.URLField(blank=True)
    webhook_secret_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="Name of the environment variable holding the webhook signing secret.",
    )
    max_in_flight = models.PositiveIntegerField(
        default=1000, help_text="Ceiling on items leased at once; operators are warned near it."
    )
    reviewer_groups = models.ManyToManyField(Group, blank=True, related_name="review_queues")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(lease_ttl__gt=timedelta(0)), name="queue_lease_ttl_positive"
            ),
            models.CheckConstraint(
                condition=Q(escalation_threshold__gte=1), name="queue_escalation_threshold_min"
            ),
            models.CheckConstraint(
                condition=~Q(escalation_queue=models.F("id")), name="queue_not_own_escalation"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class ReasonCode(models.Model):
    queue = models.ForeignKey(Queue, on_delete=models.PROTECT, related_name="reason_codes")
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    code = models.SlugField(max_length=64)
    label = models.CharField(max_length=200)
    retired_at = models.DateTimeField(
        null=True, blank=True, help_text="Retired codes are hidden from new decisions."
    )

    class Meta:
        ordering = ["queue", "verdict", "code"]
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "verdict", "code"], name="reasoncode_unique_per_queue_verdict"
            ),
            # Target of the composite foreign key that ties a decision's reason to its verdict
            # and queue (migration 0002).
            models.UniqueConstraint(
                fields=["id", "queue", "verdict"], name="reasoncode_id_queue_verdict"
            ),
            models.CheckConstraint(
                condition=Q(verdict__in=[v.value for v in Verdict]), name="reasoncode_verdict_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.label} ({self.code})"


class ReviewItem(models.Model):
    queue = models.ForeignKey(Queue, on_delete=models.PROTECT, related_name="items")
    state = models.CharField(max_length=16, choices=ItemState.choices, default=ItemState.PENDING)
    priority = models.IntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    subject = models.CharField(max_length=500)
    payload = models.JSONField(default=dict, encoder=ExactEncoder, decoder=ExactDecoder)
    idempotency_key = models.CharField(max_length=200, unique=True)
    source_hash = models.CharField(max_length=128, blank=True)
    trace_id = models.UUIDField(default=uuid.uuid4)
    lease_owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    lease_token = models.UUIDField(null=True, blank=True)
    lease_expires = models.DateTimeField(null=True, blank=True)
    lease_count = models.PositiveIntegerField(default=0)
    decided_at = models.DateTimeField(null=True, blank=True)
    evidence_updated_at = models.DateTimeField(null=True, blank=True)
    escalated_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="escalations"
    )

    objects = ReviewItemManager()

    class Meta:
        indexes = [
            # Fresh work, in the order a claim takes it. Leased and decided rows are not in it,
            # so a claim never walks past live leases or history.
            models.Index(
                fields=["queue", "-priority", "created_at"],
                name="item_pending_claim",
                condition=Q(state="pending"),
            ),
            # Expired leases, oldest first, found at claim time without a sweeper.
            models.Index(
                fields=["queue", "lease_expires"],
                name="item_leased_expiry",
                condition=Q(state="leased"),
            ),
            models.Index(
                fields=["lease_owner", "queue"],
                name="item_lease_owner",
                condition=Q(state="leased"),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=[s.value for s in ItemState]), name="item_state_valid"
            ),
            # A leased row names its holder, its fence and its expiry; no other row carries them.
            models.CheckConstraint(
                condition=(
                    Q(
                        state="leased",
                        lease_owner__isnull=False,
                        lease_token__isnull=False,
                        lease_expires__isnull=False,
                    )
                    | (
                        ~Q(state="leased")
                        & Q(
                            lease_owner__isnull=True,
                            lease_token__isnull=True,
                            lease_expires__isnull=True,
                        )
                    )
                ),
                name="item_lease_columns_match_state",
            ),
            models.CheckConstraint(
                condition=Q(state="decided", decided_at__isnull=False)
                | (~Q(state="decided") & Q(decided_at__isnull=True)),
                name="item_decided_at_matches_state",
            ),
            # Target of the composite foreign key from Decision (migration 0002).
            models.UniqueConstraint(fields=["id", "queue"], name="item_id_queue"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.subject}"


class Decision(models.Model):
    """One verdict. Never updated, never deleted: the database refuses both (migration 0002)."""

    item = models.ForeignKey(ReviewItem, on_delete=models.PROTECT, related_name="decisions")
    # Denormalised from the item so the database can check the reason code belongs to it.
    queue = models.ForeignKey(Queue, on_delete=models.PROTECT, related_name="+")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="decisions"
    )
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    reason_code = models.ForeignKey(ReasonCode, on_delete=models.PROTECT, related_name="+")
    evidence_hash = models.CharField(max_length=64)
    note = models.TextField(blank=True)
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="superseded_by"
    )
    # NULL, not "", for "not an overturn": the overturn check constraint tests IS NULL.
    corrected_verdict = models.CharField(  # noqa: DJ001
        max_length=16, choices=Verdict.choices, null=True, blank=True
    )
    lease_token = models.UUIDField(
        null=True, blank=True, help_text="The lease this decision was fenced by."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Filled by the insert trigger: position and hash in the tamper-evident chain.
    chain_seq = models.BigIntegerField(null=True, editable=False, unique=True)
    chain_hash = models.CharField(max_length=64, blank=True, editable=False)

    objects = DecisionManager()

    class Meta:
        ordering = ["id"]
        permissions = [("can_overturn", "Can overturn a standing decision")]
        indexes = [
            # Time windows over the log (/ops/, /metrics, exports). The table is append-only and
            # created_at grows with the physical order, so a BRIN index of a few pages serves.
            BrinIndex(fields=["created_at"], name="decision_created_brin"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(verdict__in=[v.value for v in Verdict]), name="decision_verdict_valid"
            ),
            # Overturn columns are set if and only if the verdict is overturn.
            models.CheckConstraint(
                condition=(
                    Q(
                        verdict="overturn",
                        supersedes__isnull=False,
                        corrected_verdict__in=[v.value for v in CORRECTED_VERDICTS],
                    )
                    | (
                        ~Q(verdict="overturn")
                        & Q(supersedes__isnull=True, corrected_verdict__isnull=True)
                    )
                ),
                name="decision_overturn_columns",
            ),
            models.CheckConstraint(
                condition=Q(evidence_hash__regex=r"^[0-9a-f]{64}$"),
                name="decision_evidence_hash_sha256",
            ),
            # One reviewer verdict per item; later changes are overturns.
            models.UniqueConstraint(
                fields=["item"], condition=~Q(verdict="overturn"), name="decision_one_per_item"
            ),
            # Target of the composite foreign key that keeps an overturn on its own item.
            models.UniqueConstraint(fields=["id", "item"], name="decision_id_item"),
        ]

    def __str__(self) -> str:
        return f"Decision #{self.pk}: {self.verdict} on item {self.item_id}"

    @property
    def standing_verdict(self) -> str:
        """The verdict this row leaves standing (an overturn's corrected verdict)."""
        return self.corrected_verdict or self.verdict


class AppliedDecision(models.Model):
    """Proof a decision's effect was carried out; inserted ON CONFLICT DO NOTHING with it."""

    decision = models.OneToOneField(
        Decision, primary_key=True, on_delete=models.PROTECT, related_name="applied"
    )
    applied_at = models.DateTimeField(auto_now_add=True)
    outcome = models.JSONField(default=dict, blank=True)

    def __str__(self) -> str:
        return f"Applied decision #{self.decision_id}"


class EffectJob(models.Model):
    """Outbox row: written with its decision, drained by the apply worker."""

    decision = models.OneToOneField(
        Decision, primary_key=True, on_delete=models.PROTECT, related_name="effect_job"
    )
    queue = models.ForeignKey(Queue, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    last_error = models.TextField(blank=True)
    dead = models.BooleanField(default=False)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                name="effectjob_due",
                condition=Q(done_at__isnull=True, dead=False),
            ),
            # Dead jobs, for the operators' alarm and the admin's Retry list.
            models.Index(
                fields=["queue"],
                name="effectjob_dead",
                condition=Q(dead=True, done_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"Effect job for decision #{self.decision_id}"


class ItemEventKind(models.TextChoices):
    CREATED = "created", "Created"
    CLAIMED = "claimed", "Claimed"
    RECLAIMED = "reclaimed", "Re-claimed after expiry"
    RENEWED = "renewed", "Renewed"
    RELEASED = "released", "Released"
    AUTO_ESCALATED = "auto_escalated", "Auto-escalated"
    DECIDED = "decided", "Decided"
    EVIDENCE_REPLACED = "evidence_replaced", "Evidence replaced"


class ItemEvent(models.Model):
    """Append-only access and lease audit for an item."""

    item = models.ForeignKey(ReviewItem, on_delete=models.PROTECT, related_name="events")
    kind = models.CharField(max_length=32, choices=ItemEventKind.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    at = models.DateTimeField(auto_now_add=True)
    detail = models.JSONField(default=dict, blank=True, encoder=ExactEncoder)

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["item", "at"], name="itemevent_item_at")]

    def __str__(self) -> str:
        return f"{self.kind} on item {self.item_id}"


class ChainVerification(models.Model):
    """The outcome of each verify_decisions run, shown to admins."""

    ran_at = models.DateTimeField(auto_now_add=True)
    ok = models.BooleanField()
    checked = models.BigIntegerField()
    first_broken_id = models.BigIntegerField(null=True, blank=True)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["-ran_at"]
        get_latest_by = "ran_at"

    def __str__(self) -> str:
        return f"Chain {'verified' if self.ok else 'BROKEN'} at {self.ran_at:%Y-%m-%d %H:%M}"


class ChainBatch(models.Model):
    """A sealed batch of decisions: a Merkle root over them, chained to the batch before it.

    Decisions commit without any chain lock; the sealer (queue_app/chain.py, run by the apply
    worker) gathers the committed, unsealed ones into a batch shortly after. Append-only.
    """

    seq = models.BigIntegerField(primary_key=True)
    size = models.PositiveIntegerField()
    merkle_root = models.CharField(max_length=64)
    # The previous batch's hash; for the first batch, the head of the per-decision chain that
    # decisions carried before sealing existed (chain_hash), so old and new form one log.
    prev_hash = models.CharField(max_length=64, blank=True)
    batch_hash = models.CharField(max_length=64, unique=True)
    sealed_at = models.DateTimeField()

    class Meta:
        ordering = ["-seq"]

    def __str__(self) -> str:
        return f"Sealed batch #{self.seq} ({self.size} decisions)"


class ChainEntry(models.Model):
    """A decision's place in a sealed batch (its leaf position in the batch's Merkle tree)."""

    decision = models.OneToOneField(
        Decision, primary_key=True, on_delete=models.PROTECT, related_name="seal"
    )
    batch = models.ForeignKey(ChainBatch, on_delete=models.PROTECT, related_name="entries")
    position = models.PositiveIntegerField()
    # The leaf as sealed: the batch root is over these, and a decision whose leaf today differs
    # from its sealed leaf is the one that was altered.
    leaf = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["batch", "position"], name="chainentry_position")
        ]

    def __str__(self) -> str:
        return f"Decision #{self.decision_id} at {self.batch_id}/{self.position}"


class UnsealedDecision(models.Model):
    """Work for the sealer: a committed decision not yet in a batch (written by a trigger)."""

    decision = models.OneToOneField(
        Decision, primary_key=True, on_delete=models.PROTECT, related_name="+"
    )

    def __str__(self) -> str:
        return f"Decision #{self.decision_id} (unsealed)"


class ApiScope(models.TextChoices):
    INTAKE = "intake", "Intake (push items)"
    ADJUDICATE = "adjudicate", "Adjudicate (lease and decide)"


class ApiClient(models.Model):
    """An upstream system or automated adjudicator calling /api/v1/ with a bearer token.

    Only a sha256 of the token is stored; the token itself is shown once, when created. Each
    client acts through its own service user, so leases and decisions name a real principal.
    """

    name = models.CharField(max_length=200, unique=True)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="api_client"
    )
    token_prefix = models.CharField(max_length=12, help_text="First characters, to recognise it.")
    token_hash = models.CharField(max_length=64, unique=True)
    can_intake = models.BooleanField(default=False)
    can_adjudicate = models.BooleanField(default=False)
    queues = models.ManyToManyField(Queue, blank=True, related_name="api_clients")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.token_prefix}…)"
