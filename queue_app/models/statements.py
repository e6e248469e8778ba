"""Statements of reasons (DSA Article 17): a queue's policy, its reasons' mappings, the statements.

A queue whose decisions restrict someone (remove their content, hold their payment, suspend
their account, refuse them the service) has a StatementPolicy: which verdict restricts, which
kinds of restriction it is, and the defaults every statement of the queue carries. Each reason
code of the restricting verdict has a ReasonMapping: its legal or contractual ground, category,
keywords and the template its facts are written through. Both are configuration, recorded in the
access and configuration history (models/access_history.py); the admin refuses, at save time, a
policy and mapping whose statements the Transparency Database's contract would refuse.

A StatementOfReasons is built by the apply worker in the transaction that carries its decision
out (queue_app/apply.py), so once per decision that became final. Append-only, and sealed into
the decision log's Merkle batches like decisions and second-person outcomes (queue_app/chain.py).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

RESTRICTABLE_VERDICTS = [("approve", "Approve"), ("reject", "Reject")]


class StatementPolicy(models.Model):
    """Whether a queue's decisions restrict someone, how, and the defaults of its statements."""

    queue = models.OneToOneField(
        "queue_app.Queue", on_delete=models.PROTECT, related_name="statement_policy"
    )
    restricts = models.BooleanField(
        default=True,
        help_text="The queue's decisions restrict someone: each final one gets a statement.",
    )
    restricting_verdict = models.CharField(
        max_length=16,
        choices=RESTRICTABLE_VERDICTS,
        default="reject",
        help_text="The verdict that restricts (a content removal, a refused customer).",
    )
    # The four kinds of restriction (at least one): values of the contract's enumerations.
    decision_visibility = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    decision_visibility_other = models.CharField(max_length=500, blank=True)
    decision_monetary = models.CharField(max_length=64, blank=True)
    decision_monetary_other = models.CharField(max_length=500, blank=True)
    decision_provision = models.CharField(max_length=64, blank=True)
    decision_account = models.CharField(max_length=64, blank=True)
    account_type = models.CharField(max_length=64, blank=True)
    restriction_duration = models.DurationField(
        null=True,
        blank=True,
        help_text="How long the restriction lasts from its application; empty: indefinite.",
    )
    territorial_scope = ArrayField(
        models.CharField(max_length=2),
        default=list,
        blank=True,
        help_text="Country codes where the restriction applies (EU and EEA); empty: not stated.",
    )
    content_type = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    content_type_other = models.CharField(max_length=500, blank=True)
    content_language = models.CharField(max_length=2, blank=True)
    source_type = models.CharField(max_length=64, default="SOURCE_VOLUNTARY")
    source_identity = models.CharField(
        max_length=500,
        blank=True,
        help_text="Who notified (a trusted flagger's name), only when the source is a notice.",
    )
    puid_template = models.CharField(
        "PUID scheme",
        max_length=200,
        default="{queue}-{decision_id}",
        help_text="The platform's unique id of each statement: {queue}, {decision_id}, {item_id}.",
    )
    content_date_key = models.CharField(
        max_length=100,
        blank=True,
        help_text=(
            "The payload key holding when the content was posted (YYYY-MM-DD...); empty: the "
            "day the item arrived."
        ),
    )
    appeal_window_months = models.PositiveSmallIntegerField(
        default=6,
        validators=[MinValueValidator(6)],
        help_text=(
            "How long after a statement the affected person may appeal it (at least six months "
            "under the DSA's Article 20)."
        ),
    )
    appeal_decide_within = models.DurationField(
        default=timedelta(days=14),
        help_text=(
            "How long after an appeal arrives it should be decided (its deadline in the "
            "appeals lane)."
        ),
    )
    out_of_court_settlement = models.TextField(
        max_length=2000,
        blank=True,
        help_text=(
            "Where the affected person can take the dispute out of court (a certified body under "
            "the DSA's Article 21); empty: the notice says they may choose any certified body."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "statement policy"
        verbose_name_plural = "statement policies"

    def __str__(self) -> str:
        return f"Statement policy of queue {self.queue_id}"


class ReasonMapping(models.Model):
    """A reason code's statement of reasons: its ground, category, keywords and explanation."""

    # Denormalised from the reason code so the history can say which queue a change concerns.
    queue = models.ForeignKey("queue_app.Queue", on_delete=models.PROTECT, related_name="+")
    reason_code = models.OneToOneField(
        "queue_app.ReasonCode", on_delete=models.PROTECT, related_name="dsa_mapping"
    )
    decision_ground = models.CharField(max_length=64)
    ground = models.CharField(
        max_length=500,
        help_text=(
            "The law relied on (illegal content) or the terms' clause (incompatible content)."
        ),
    )
    incompatible_content_illegal = models.CharField(
        max_length=3, blank=True, help_text="Incompatible content only: is it illegal too?"
    )
    reference_url = models.URLField(
        max_length=500, blank=True, help_text="The terms or the law relied on."
    )
    category = models.CharField(max_length=80)
    category_addition = ArrayField(models.CharField(max_length=80), default=list, blank=True)
    keywords = ArrayField(models.CharField(max_length=80), default=list, blank=True)
    keyword_other = models.CharField(max_length=500, blank=True)
    explanation_template = models.TextField(
        max_length=2000,
        default="{reason}. {note}",
        help_text="The facts relied on: {reason}, {reason_code}, {queue} and {note} (redacted).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "reason's statement mapping"

    def __str__(self) -> str:
        return f"Statement mapping of reason {self.reason_code_id}"


class StatementKind(models.TextChoices):
    # A restriction: the statement the contract describes, submitted to the database.
    RESTRICTION = "restriction", "Restriction"
    # An overturn that lifted a restriction: it names the statement it withdraws; the
    # Transparency Database takes no such statement, the affected person's notice does.
    LIFTED = "lifted", "Restriction lifted"


class StatementOfReasons(models.Model):
    """One statement, as built and sent: never updated, never deleted (the database refuses)."""

    decision = models.OneToOneField(
        "queue_app.Decision", on_delete=models.PROTECT, related_name="statement"
    )
    kind = models.CharField(max_length=16, choices=StatementKind.choices)
    # The statement this one replaces: the one of the decision an overturn superseded.
    replaces = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="replaced_by"
    )
    puid = models.CharField(max_length=500, unique=True)
    # The statement exactly as sent: canonical JSON (sorted keys, no spaces), hashed below.
    body = models.TextField()
    sha256 = models.CharField(max_length=64)
    # The contract's refusals, field -> reasons; empty when it is valid. A failing statement
    # stays recorded so an operator sees it; the sender leaves it out.
    errors = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "statement of reasons"
        verbose_name_plural = "statements of reasons"
        ordering = ["id"]
        indexes = [
            models.Index(fields=["created_at"], name="statement_failing", condition=~Q(errors={}))
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=[k.value for k in StatementKind]), name="statement_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(sha256__regex=r"^[0-9a-f]{64}$"), name="statement_sha256_hex"
            ),
        ]

    def __str__(self) -> str:
        return f"Statement {self.puid}"

    @property
    def statement(self) -> dict[str, Any]:
        """The statement as sent."""
        return dict(json.loads(self.body))

    @property
    def valid(self) -> bool:
        return not self.errors


class StatementEntry(models.Model):
    """A statement's place in a sealed batch, after the batch's decisions and outcomes."""

    statement = models.OneToOneField(
        StatementOfReasons, primary_key=True, on_delete=models.PROTECT, related_name="seal"
    )
    batch = models.ForeignKey(
        "queue_app.ChainBatch", on_delete=models.PROTECT, related_name="statement_entries"
    )
    position = models.PositiveIntegerField()
    # The leaf as sealed (as ChainEntry.leaf).
    leaf = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["batch", "position"], name="statemententry_position")
        ]

    def __str__(self) -> str:
        return f"Statement #{self.statement_id} at {self.batch_id}/{self.position}"


class UnsealedStatement(models.Model):
    """Work for the sealer: a committed statement not yet in a batch (written by a trigger)."""

    statement = models.OneToOneField(
        StatementOfReasons, primary_key=True, on_delete=models.PROTECT, related_name="+"
    )

    def __str__(self) -> str:
        return f"Statement #{self.statement_id} (unsealed)"


class DeliveryChannel(models.TextChoices):
    # The notice to the affected person, POSTed to the queue's upstream platform webhook.
    NOTICE = "notice", "Notice to the affected person"
    # The statement, without personal data, to the Commission's Transparency Database.
    TRANSPARENCY_DATABASE = "tdb", "Transparency Database"


class StatementDelivery(models.Model):
    """Outbox row: one statement to deliver on one channel, written with the statement.

    Drained by the apply worker (queue_app/delivery.py): claimed FOR UPDATE SKIP LOCKED, sent,
    and marked done in the claiming transaction, so a worker that dies after sending sends
    again with the same idempotency key (the statement's PUID).
    """

    statement = models.ForeignKey(
        StatementOfReasons, on_delete=models.PROTECT, related_name="deliveries"
    )
    channel = models.CharField(max_length=8, choices=DeliveryChannel.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    last_error = models.TextField(blank=True)
    dead = models.BooleanField(default=False)
    done_at = models.DateTimeField(null=True, blank=True)
    # What the receiver answered on success: the database's uuid and permalink, or the status.
    receipt = models.JSONField(default=dict, blank=True)

    class Meta:
        verbose_name = "statement delivery"
        verbose_name_plural = "statement deliveries"
        constraints = [
            models.UniqueConstraint(fields=["statement", "channel"], name="delivery_once"),
            models.CheckConstraint(
                condition=Q(channel__in=[c.value for c in DeliveryChannel]),
                name="delivery_channel_valid",
            ),
        ]
        indexes = [
            models.Index(
                fields=["channel", "next_attempt_at"],
                name="delivery_due",
                condition=Q(done_at__isnull=True, dead=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_channel_display()} of statement #{self.statement_id}"

    @property
    def status(self) -> str:
        if self.done_at:
            return "done"
        return "dead" if self.dead else "waiting"
