"""Queues, items, decisions, reasons, effects, the sealed chain, API clients and sessions.

Queue state (ReviewItem.state and the lease columns) is derived working state; decisions are
the facts. Rules that must hold whatever code writes the rows live in the database: check
constraints here, and the composite foreign keys and append-only triggers in the migrations.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import BrinIndex, GinIndex
from django.contrib.sessions.base_session import AbstractBaseSession
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q, Value
from django.db.models.functions import Upper

from queue_app.datetimes import EARLIEST, LATEST, local_text
from queue_app.jsonutil import ExactDecoder, ExactEncoder
from queue_app.models.managers import DecisionManager, ReviewItemManager
from queue_app.models.subject_search import SubjectWords
from queue_app.rules import RuleTest, rule_errors


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
    # On hold, awaiting information, until hold_until: no claim takes it before then, and the
    # first claim after takes it (leases_sql._CLAIM, candidate set "resumed").
    HELD = "held", "On hold"
    # Decided by a maker whose verdict needs a second person's check before it takes effect
    # (queue_app/second_person.py); not claimable for review, and no effect job yet.
    AWAITING_CHECK = "awaiting_check", "Awaiting check"


class SuggestionDisplay(models.TextChoices):
    """How a queue's item page shows a machine suggestion (never in blind QA, never preselected)."""

    SHOWN = "shown", "Shown with the evidence"
    ON_REQUEST = "on_request", "Revealed on request"
    HIDDEN = "hidden", "Hidden"


class VeilBlur(models.TextChoices):
    """How strongly a sensitive queue's images are blurred until the reviewer reveals each one."""

    NONE = "none", "None (the image stays covered until revealed)"
    LOW = "low", "Low (shapes show through)"
    HIGH = "high", "High"


class SuggestionView(models.TextChoices):
    """What a decision's maker saw of the item's suggestion; NULL on the decision: none existed."""

    SHOWN = "shown", "Shown with the evidence"
    # Revealed on request: before the reviewer chose a verdict (a key), or after it.
    REVEALED_BEFORE_CHOICE = "revealed_before_choice", "Revealed before choosing"
    REVEALED_AFTER_CHOICE = "revealed_after_choice", "Revealed after choosing"
    NOT_SHOWN = "not_shown", "Not shown"
    # The decision is the suggestion itself, taken by the queue's automation user.
    AUTOMATIC = "automatic", "Automatic (the machine's decision)"


# Open work against its deadline: everything not final. An item awaiting its check is open until
# the check confirms it. The index item_open_work_due and the console's counts
# read this list; ops_sql.SLA_OPEN spells it out in SQL.
DEADLINE_OPEN_STATES = [
    ItemState.PENDING.value,
    ItemState.LEASED.value,
    ItemState.HELD.value,
    ItemState.AWAITING_CHECK.value,
]


class Queue(models.Model):
    # Not columns: set on the instance by the pages that list queues, read with it or after.
    may_review: bool
    pending_count: int
    waiting_count: int
    oldest_pending: datetime | None
    my_lease: ReviewItem | None
    breached_count: int
    at_risk_count: int

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
    # Called "max in flight" on every page, metric and message (its verbose name).
    max_in_flight = models.PositiveIntegerField(
        "max in flight",
        default=1000,
        help_text="The most items leased at once; operators are warned near it.",
    )
    release_skip = models.DurationField(
        default=timedelta(minutes=15),
        help_text=(
            "After a reviewer releases an item, how long their Next item offers them other work "
            "first (the item comes back to them sooner only when nothing else is waiting)."
        ),
    )
    reviewer_groups = models.ManyToManyField(Group, blank=True, related_name="review_queues")
    # Evidence here may be harmful to look at (content moderation): images show blurred and in
    # greyscale until the reviewer reveals each one, and every reveal is an item event.
    sensitive = models.BooleanField(
        default=False,
        db_default=False,
        help_text=(
            "Show attached images blurred and in greyscale until the reviewer reveals each one "
            "(a click or a key); each reveal is recorded in the item's history."
        ),
    )
    # Reviewer wellness on a sensitive queue: how its images are shown to a reviewer who has set
    # no preference of their own (ReviewerPreferences; the preferences page says which wins).
    veil_blur = models.CharField(
        "image blur",
        max_length=8,
        choices=VeilBlur.choices,
        default=VeilBlur.HIGH,
        db_default=VeilBlur.HIGH,
        help_text="Sensitive queues: how strongly images are blurred until revealed.",
    )
    veil_greyscale = models.BooleanField(
        "images in greyscale",
        default=True,
        db_default=True,
        help_text="Sensitive queues: show images in greyscale, before and after the reveal.",
    )
    veil_autoplay = models.BooleanField(
        "autoplay moving images",
        default=False,
        db_default=False,
        help_text="Sensitive queues: whether moving images play without being asked.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Deadlines and holds (docs/architecture.md "Deadlines, holds and the subject").
    default_sla = models.DurationField(
        "default SLA",
        null=True,
        blank=True,
        help_text=(
            "Deadline for items that arrive without one (due_at = receipt + this). Empty: "
            "such items have no deadline."
        ),
    )
    sla_warning = models.DurationField(
        "SLA warning window",
        default=timedelta(hours=4),
        help_text="Items due within this window count as at risk on the console and /ops/.",
    )
    max_hold = models.DurationField(
        default=timedelta(days=7),
        help_text="The longest a reviewer may put an item on hold in one go.",
    )
    # Second-person controls (queue_app/second_person.py): the share of effective approve/reject
    # decisions drawn for a blind QA review. Maker-checker policies are CheckPolicy rows.
    qa_rate = models.DecimalField(
        "QA sample rate (%)",
        max_digits=5,
        decimal_places=2,
        default=0,
        db_default=0,
        help_text="Percentage (0-100) of effective decisions drawn for a blind second review.",
    )

    # Machine suggestions under human oversight (docs/architecture.md "Machine suggestions").
    suggestion_display = models.CharField(
        max_length=16,
        choices=SuggestionDisplay.choices,
        default=SuggestionDisplay.ON_REQUEST,
        db_default=SuggestionDisplay.ON_REQUEST,
        help_text=(
            "How the item page shows an item's machine suggestion: with the evidence, only when "
            "the reviewer asks (after choosing a verdict, or with a key), or not at all. It is "
            "never preselected, and blind QA never shows it."
        ),
    )
    auto_decide_above = models.DecimalField(
        "automatic decision at confidence",
        max_digits=5,
        decimal_places=4,
        null=True,
        blank=True,
        help_text=(
            "A suggestion at or above this confidence (0-1) is taken as the decision of the "
            "automation user at intake. Empty: people decide everything."
        ),
    )
    auto_decide_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name="automation user",
        help_text="The service user automatic decisions are recorded under.",
    )
    auto_decide_qa_rate = models.DecimalField(
        "QA sample rate of automatic decisions (%)",
        max_digits=5,
        decimal_places=2,
        default=0,
        db_default=0,
        help_text=(
            "Percentage (0-100) of automatic decisions drawn for a blind human review; "
            "required (above 0) when automatic decisions are on."
        ),
    )
    automation_stopped_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text=(
            "The stop switch: while set, every item goes to people, whatever its confidence."
        ),
    )

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(
                condition=Q(qa_rate__gte=0, qa_rate__lte=100), name="queue_qa_rate_percent"
            ),
            models.CheckConstraint(
                condition=Q(suggestion_display__in=[d.value for d in SuggestionDisplay]),
                name="queue_suggestion_display_valid",
            ),
            models.CheckConstraint(
                condition=Q(veil_blur__in=[b.value for b in VeilBlur]),
                name="queue_veil_blur_valid",
            ),
            # Automatic decisions need a threshold in (0, 1], a user to record them under and a
            # human QA sample; with no threshold none of it applies.
            models.CheckConstraint(
                condition=Q(auto_decide_above__isnull=True)
                | Q(
                    auto_decide_above__gt=0,
                    auto_decide_above__lte=1,
                    auto_decide_user__isnull=False,
                    auto_decide_qa_rate__gt=0,
                ),
                name="queue_auto_decide_complete",
                violation_error_message=(
                    "Automatic decisions need a confidence above 0 and at most 1, an automation "
                    "user, and a QA sample rate above 0."
                ),
            ),
            models.CheckConstraint(
                condition=Q(auto_decide_qa_rate__gte=0, auto_decide_qa_rate__lte=100),
                name="queue_auto_decide_qa_rate_percent",
            ),
            models.CheckConstraint(
                condition=Q(lease_ttl__gt=timedelta(0)), name="queue_lease_ttl_positive"
            ),
            models.CheckConstraint(
                condition=Q(escalation_threshold__gte=1), name="queue_escalation_threshold_min"
            ),
            models.CheckConstraint(
                condition=~Q(escalation_queue=models.F("id")), name="queue_not_own_escalation"
            ),
            models.CheckConstraint(
                condition=Q(release_skip__gte=timedelta(0)), name="queue_release_skip_not_negative"
            ),
            models.CheckConstraint(
                condition=Q(default_sla__isnull=True) | Q(default_sla__gt=timedelta(0)),
                name="queue_default_sla_positive",
            ),
            models.CheckConstraint(
                condition=Q(sla_warning__gte=timedelta(0)), name="queue_sla_warning_not_negative"
            ),
            models.CheckConstraint(
                condition=Q(max_hold__gt=timedelta(0)), name="queue_max_hold_positive"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class AutomationSwitch(models.Model):
    """The stop switch for every queue's automatic decisions: one row (id 1), made by the migration.

    While stopped_at is set, no queue decides automatically, whatever its own switch says; the
    database refuses such a decision (the decision_suggestion trigger reads this row FOR SHARE,
    so a stop waits for automatic decisions already being written and none follows it).
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1, editable=False)
    stopped_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="While set, every item in every queue goes to people.",
    )

    class Meta:
        verbose_name = "automation stop switch"
        # Pressing a queue's switch, or this one, on /ops/: an operator's power that needs no
        # other change of a queue's configuration.
        permissions = [("can_stop_automation", "Can stop and restart automatic decisions")]
        constraints = [models.CheckConstraint(condition=Q(id=1), name="automationswitch_one_row")]

    def __str__(self) -> str:
        return "Automatic decisions: stopped" if self.stopped_at else "Automatic decisions: on"


class HoldReason(models.Model):
    """Why an item waits (awaiting documents, customer contacted…): a closed set per queue."""

    queue = models.ForeignKey(Queue, on_delete=models.PROTECT, related_name="hold_reasons")
    code = models.SlugField(max_length=64)
    label = models.CharField(max_length=200)
    retired_at = models.DateTimeField(
        null=True, blank=True, help_text="Retired reasons are not offered for new holds."
    )

    class Meta:
        ordering = ["queue", "label"]
        constraints = [
            models.UniqueConstraint(fields=["queue", "code"], name="holdreason_unique_per_queue"),
            # Target of the composite foreign key that keeps an item's hold reason in its own
            # queue.
            models.UniqueConstraint(fields=["id", "queue"], name="holdreason_id_queue"),
        ]

    def __str__(self) -> str:
        return f"{self.label} ({self.code})"


class ReasonCode(models.Model):
    queue = models.ForeignKey(Queue, on_delete=models.PROTECT, related_name="reason_codes")
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    code = models.SlugField(max_length=64)
    label = models.CharField(
        max_length=200,
        help_text=(
            "Frozen once a decision uses the code (the database refuses the change): past "
            "decisions show the wording they were made with. To reword, retire this code and "
            "add a new one."
        ),
    )
    retired_at = models.DateTimeField(
        null=True, blank=True, help_text="Retired codes are hidden from new decisions."
    )
    is_default = models.BooleanField(
        "safe default",
        default=False,
        help_text=(
            "Preselect this reason when a reviewer picks its verdict. At most one per queue and "
            "verdict; leave every reason of a verdict unmarked when they differ in consequence "
            "(the reviewer then has to choose)."
        ),
    )

    class Meta:
        ordering = ["queue", "verdict", "code"]
        constraints = [
            # A verdict has at most one preselected reason in a queue.
            models.UniqueConstraint(
                fields=["queue", "verdict"],
                condition=Q(is_default=True),
                name="reasoncode_one_default_per_verdict",
                violation_error_message=(
                    "This queue already has a safe default reason for this verdict; unmark it "
                    "first."
                ),
            ),
            models.UniqueConstraint(
                fields=["queue", "verdict", "code"], name="reasoncode_unique_per_queue_verdict"
            ),
            # Target of the composite foreign key that ties a decision's reason to its verdict
            # and queue.
            models.UniqueConstraint(
                fields=["id", "queue", "verdict"], name="reasoncode_id_queue_verdict"
            ),
            models.CheckConstraint(
                condition=Q(verdict__in=[v.value for v in Verdict]), name="reasoncode_verdict_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.label} ({self.code})"


class EvidenceRule(models.Model):
    """A queue's warning on one payload field: when the test matches, the item page says so."""

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="evidence_rules")
    path = models.CharField(
        max_length=200,
        help_text="Dotted path into the payload, e.g. document.expires or checks.0.result.",
    )
    test = models.CharField(max_length=16, choices=RuleTest.choices)
    value = models.CharField(
        max_length=500,
        blank=True,
        help_text="The list (comma-separated) or the threshold (an exact number); empty for dates.",
    )
    message = models.CharField(
        max_length=200, help_text='What the reviewer reads, e.g. "Document has expired".'
    )

    class Meta:
        ordering = ["queue", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(test__in=[t.value for t in RuleTest]), name="evidencerule_test_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.path} {self.get_test_display()} {self.value}".strip()

    def clean(self) -> None:
        errors = rule_errors(path=self.path, test=self.test, value=self.value)
        if errors:
            raise ValidationError(errors)


class ReviewItem(models.Model):
    queue = models.ForeignKey(Queue, on_delete=models.PROTECT, related_name="items")
    state = models.CharField(max_length=16, choices=ItemState.choices, default=ItemState.PENDING)
    priority = models.IntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    subject = models.CharField(max_length=500)
    payload = models.JSONField(default=dict, encoder=ExactEncoder, decoder=ExactDecoder)
    # The upstream request that made the item, scoped (see the key constraint below): a key
    # names an item only for the client that sent it, in the queue it was sent to. NULL for
    # escalation items, which the system opens and links to their decision instead.
    idempotency_key = models.CharField(  # noqa: DJ001
        max_length=200, null=True, blank=True
    )
    # The queue the item was pushed into; queue moves on auto-escalation, this never does.
    # Filled from queue by an insert trigger when an INSERT leaves it out.
    intake_queue = models.ForeignKey(
        Queue, on_delete=models.PROTECT, related_name="+", null=False, blank=True
    )
    # The API client that pushed the item; NULL for the console, seeding, management commands,
    # the system's own escalations, and items that predate client scoping.
    created_by_client = models.ForeignKey(
        "ApiClient", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
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
    # The escalate verdict this item was opened for: one item per decision, whatever retries.
    # A constraint also ties it to escalated_from (the decision is on the item escalated).
    escalated_by_decision = models.OneToOneField(
        "Decision",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="escalation_item",
    )
    # Who last gave the item back, and when: their Next item passes it over for the queue's
    # release_skip (leases_sql._CLAIM), so a release means "not me, not now".
    released_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    released_at = models.DateTimeField(null=True, blank=True)
    # Who may not lease or decide this item (the hand-off): everyone who decided in the chain of
    # items it escalates, and whoever abandoned it before it was moved to its escalation queue.
    # Filled by the database (reviewitem_handoff_insert) and by ESCALATE_ABANDONED, only ever grown;
    # the claim passes these items over for them (leases_sql._CLAIM) and a trigger refuses a
    # lease or decision by them. Empty for every item that is not an escalation.
    excluded_reviewer_ids = ArrayField(
        models.BigIntegerField(),
        default=list,
        db_default=Value([], output_field=ArrayField(models.BigIntegerField())),
        blank=True,
        editable=False,
    )
    # The item's files, by name: {name: {"sha256", "content_type", "size"}} (queue_app/
    # evidence_files.py). The bytes live content-addressed in the attachments storage; the entries
    # are on the row itself so the fenced close reads them with the row it locks, and the
    # evidence hash covers them (queue_app/evidence.py). Frozen once decided (the trigger
    # item_attachments_frozen).
    attachments = models.JSONField(
        default=dict, db_default=models.Value({}, output_field=models.JSONField()), blank=True
    )
    # The deadline: from intake (due_at, or sla_seconds from receipt), else the
    # queue's default_sla; NULL = none. A hold pushes it back by exactly the time held
    # (services/holds.py); an escalation item keeps its origin's.
    due_at = models.DateTimeField(null=True, blank=True)
    # While state = 'held': until when, since when, and why (a code of the item's queue).
    hold_until = models.DateTimeField(null=True, blank=True)
    held_at = models.DateTimeField(null=True, blank=True)
    hold_reason = models.ForeignKey(
        HoldReason, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The customer, account or merchant the item concerns: the item page lists the subject's
    # other items (in queues the viewer may review).
    subject_key = models.CharField(  # noqa: DJ001
        max_length=200, null=True, blank=True
    )
    # How many times a checker returned the item's decision (queue_app/second_person.py): each
    # return opens a new round, and the database allows one review decision per item and round.
    review_round = models.PositiveIntegerField(default=0, db_default=0)
    # The evidence hash (queue_app/evidence.py) of the evidence the row holds: every writer of
    # evidence stores it (services.intake.store_evidence_hash), and a trigger clears it in any
    # other update that changes the subject, payload or attachments. So it is the hash of the
    # evidence the row holds, or nothing. The decide compares the form's hash with it
    # (decisions_sql.CLOSE_AND_RECORD_DECISION) and refuses an item without one
    # (backfill_evidence_hashes gives one to rows from before it was kept).
    evidence_hash = models.CharField(  # noqa: DJ001
        max_length=64, null=True, blank=True, editable=False
    )

    # A machine's suggested decision, from intake, frozen after it (a trigger refuses a change):
    # {"verdict", "reason_code", "confidence" (a decimal string in [0, 1]), "model": {"name",
    # "version"}, "explanation": [{"factor", "value"}, ...]}. The evidence hash covers it.
    # NULL: the item came without one.
    suggestion = models.JSONField(
        null=True, blank=True, editable=False, encoder=ExactEncoder, decoder=ExactDecoder
    )

    objects = ReviewItemManager()

    class Meta:
        indexes = [
            # Fresh work, in the order a claim takes it. Leased and decided rows are not in it,
            # so a claim never walks past live leases or history.
            # Priority, then the earliest deadline (NULL sorts last ascending, so
            # items without one come after every dated item of their priority), then age.
            models.Index(
                fields=["queue", "-priority", "due_at", "created_at"],
                name="item_pending_claim",
                condition=Q(state="pending"),
            ),
            # Holds, soonest back first: a claim takes the due ones from here, no sweeper.
            models.Index(
                fields=["queue", "hold_until"],
                name="item_held_until",
                condition=Q(state="held"),
            ),
            # A subject's items, newest first (the item page's history, GET /items?subject_key=).
            models.Index(
                fields=["subject_key", "-created_at"],
                name="item_subject_key",
                condition=Q(subject_key__isnull=False),
            ),
            # Deadlines of open work, for the breach and at-risk counts (/ops/, console home):
            # an item awaiting its check is open until the check confirms it.
            models.Index(
                fields=["queue", "due_at"],
                name="item_open_work_due",
                condition=Q(state__in=DEADLINE_OPEN_STATES, due_at__isnull=False),
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
            # The words of subjects, for the word-prefix searches (the admin's item list, My
            # work): queue_app/models/subject_search.py builds both this and the queries.
            GinIndex(SubjectWords("subject"), name="item_subject_words"),
            # The admin item list's age filter: a recent window without reading every item.
            models.Index(fields=["created_at"], name="item_created_at"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=[s.value for s in ItemState]), name="item_state_valid"
            ),
            models.CheckConstraint(
                condition=Q(evidence_hash__isnull=True) | Q(evidence_hash__regex=r"^[0-9a-f]{64}$"),
                name="item_evidence_hash_is_sha256",
            ),
            # The shape the figures and the decide read: a verdict a reviewer picks, a reason
            # code, and a confidence in [0, 1] written as a decimal string.
            models.CheckConstraint(
                condition=Q(suggestion__isnull=True)
                | (
                    Q(suggestion__verdict__in=[v.value for v in REVIEW_VERDICTS])
                    & Q(suggestion__has_keys=["reason_code", "confidence", "model"])
                ),
                name="item_suggestion_shape",
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
            # An item awaiting its check has been decided (by the maker) but not yet confirmed.
            models.CheckConstraint(
                condition=Q(state__in=["decided", "awaiting_check"], decided_at__isnull=False)
                | (~Q(state__in=["decided", "awaiting_check"]) & Q(decided_at__isnull=True)),
                name="item_decided_at_matches_state",
            ),
            # A held row names until when, since when and why; no other row carries them.
            models.CheckConstraint(
                condition=(
                    Q(
                        state="held",
                        hold_until__isnull=False,
                        held_at__isnull=False,
                        hold_reason__isnull=False,
                        hold_until__gt=models.F("held_at"),
                    )
                    | (
                        ~Q(state="held")
                        & Q(hold_until__isnull=True, held_at__isnull=True, hold_reason__isnull=True)
                    )
                ),
                name="item_hold_columns_match_state",
            ),
            # A deadline lies where every time input must (datetimes.EARLIEST, LATEST): a year
            # Python cannot show, or a hold pushing it there, would break every page showing it.
            models.CheckConstraint(
                condition=Q(due_at__isnull=True) | Q(due_at__gte=EARLIEST, due_at__lt=LATEST),
                name="item_due_at_in_range",
                violation_error_message=(
                    "The deadline must lie between 2000-01-01 and 2999-12-31 (UTC)."
                ),
            ),
            # Target of the composite foreign key from Decision.
            models.UniqueConstraint(fields=["id", "queue"], name="item_id_queue"),
            # One item per key per client per intake queue. NULLS NOT DISTINCT: the items with
            # no client (console, seeding, legacy rows) form one scope per queue too, instead
            # of never colliding. The key leads so an exact key lookup (admin search) uses it.
            models.UniqueConstraint(
                fields=["idempotency_key", "intake_queue", "created_by_client"],
                condition=Q(idempotency_key__isnull=False),
                nulls_distinct=False,
                name="item_key_per_client_queue",
            ),
            # Only an escalation, linked to its decision, may come without a key.
            models.CheckConstraint(
                condition=Q(idempotency_key__isnull=False) | Q(escalated_by_decision__isnull=False),
                name="item_key_or_escalation",
            ),
            models.CheckConstraint(
                condition=Q(escalated_by_decision__isnull=True) | Q(escalated_from__isnull=False),
                name="item_escalation_names_origin",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.subject}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save, scoping a new item's key to the queue it is created in unless told otherwise."""
        if self.intake_queue_id is None:
            self.intake_queue_id = self.queue_id
        super().save(*args, **kwargs)


class Decision(models.Model):
    """One verdict. Never updated, never deleted: the database refuses both."""

    # Not columns: read with the row by the statements that record or show it.
    queue_slug: str
    story_status: str
    story_label: str
    check_return: Any  # services.item_page.CheckReturn or None, on the item page
    item_sequence: int  # the decision's ordinal within its item, for its effect

    item = models.ForeignKey(ReviewItem, on_delete=models.PROTECT, related_name="decisions")
    # Denormalised from the item so the database can check the reason code belongs to it.
    queue = models.ForeignKey(Queue, on_delete=models.PROTECT, related_name="+")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="decisions"
    )
    # The reviewer's username when they decided, set by the insert trigger and
    # covered by the chain hash: a later rename, or two users swapping names, does not move
    # the decision to someone else in exports and the timeline. NULL for decisions recorded
    # before 0007 (see reviewer_name).
    reviewer_username = models.CharField(  # noqa: DJ001
        max_length=150, null=True, blank=True, editable=False
    )
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    reason_code = models.ForeignKey(ReasonCode, on_delete=models.PROTECT, related_name="+")
    evidence_hash = models.CharField(max_length=64)
    note = models.TextField(blank=True)
    # Not unique: a checker may return an overturn, which stays in the log, and a new
    # overturn of the same decision may follow it. At most one overturn of a decision is in
    # force or awaiting its check at a time (the decision_one_overturn trigger).
    supersedes = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="overturns"
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
    # The item's review_round when decided, set by the decision_round trigger from
    # the item row whatever the writer sends: a checker's return opens a new round, in which
    # the item takes a new review decision (decision_one_per_item is per round).
    review_round = models.PositiveIntegerField(default=0, db_default=0, editable=False)
    # What the maker saw of the item's machine suggestion (SuggestionView), and when it was
    # first on their page; NULL when the item has none (the decision_suggestion trigger clears
    # them then, and fills suggestion_followed: whether the verdict is the suggested one, from
    # the item row whatever the writer sends). NULL on overturns. The chain hash covers all three.
    suggestion_view = models.CharField(  # noqa: DJ001
        max_length=24, choices=SuggestionView.choices, null=True, blank=True, editable=False
    )
    suggestion_shown_at = models.DateTimeField(null=True, blank=True, editable=False)
    suggestion_followed = models.BooleanField(null=True, blank=True, editable=False)

    objects = DecisionManager()

    class Meta:
        ordering = ["id"]
        permissions = [("can_overturn", "Can overturn a standing decision")]
        indexes = [
            # Time windows over the log (/ops/, /metrics, exports). The table is append-only and
            # created_at grows with the physical order, so a BRIN index of a few pages serves.
            BrinIndex(fields=["created_at"], name="decision_created_brin"),
            # A reviewer's own decisions, newest first (My work: counts by window, search).
            models.Index(fields=["reviewer", "-created_at"], name="decision_reviewer_recent"),
            # Decisions on an item with a machine suggestion, by time (the oversight figures of
            # /metrics and /ops/: a window of them). Without it each window reads every decision
            # of the window to keep the few with a suggestion (B10: 3.8x slower /metrics on
            # 2,000,000 decisions); suggestion_view is NULL on every other decision.
            models.Index(
                fields=["created_at"],
                name="decision_suggested_at",
                condition=Q(suggestion_view__isnull=False),
            ),
            # The admin's decision search by the username as decided, in any case (a renamed
            # reviewer's old name): matched whole, never as a substring of every decision's.
            models.Index(Upper("reviewer_username"), name="decision_reviewer_name"),
            # Overturns by time: which of a reviewer's decisions in a window were overturned
            # (My work) without reading the window's decisions; overturns are few.
            models.Index(
                fields=["created_at"], name="decision_overturn_at", condition=Q(verdict="overturn")
            ),
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
            models.CheckConstraint(
                condition=Q(suggestion_view__isnull=True)
                | Q(suggestion_view__in=[v.value for v in SuggestionView]),
                name="decision_suggestion_view_valid",
            ),
            # Shown at a time exactly when it was on the page.
            models.CheckConstraint(
                condition=Q(
                    suggestion_shown_at__isnull=True,
                    suggestion_view__in=[SuggestionView.NOT_SHOWN, SuggestionView.AUTOMATIC],
                )
                | Q(suggestion_view__isnull=True, suggestion_shown_at__isnull=True)
                | Q(
                    suggestion_shown_at__isnull=False,
                    suggestion_view__in=[
                        SuggestionView.SHOWN,
                        SuggestionView.REVEALED_BEFORE_CHOICE,
                        SuggestionView.REVEALED_AFTER_CHOICE,
                    ],
                ),
                name="decision_suggestion_shown_at",
            ),
            # One reviewer verdict per item and review round; later changes are overturns. A
            # round ends only when a checker returns the decision (queue_app/second_person.py).
            models.UniqueConstraint(
                fields=["item", "review_round"],
                condition=~Q(verdict="overturn"),
                name="decision_one_per_item",
            ),
            # Target of the composite foreign key that ties a lane task to its decision's
            # item, queue and maker (queue_app/second_person.py).
            models.UniqueConstraint(
                fields=["id", "item", "queue", "reviewer"], name="decision_id_item_queue_reviewer"
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

    @property
    def reviewer_name(self) -> str:
        """The reviewer's username as recorded with the decision (today's, for pre-0007 rows)."""
        return self.reviewer_username or self.reviewer.get_username()


class AppliedStatus(models.TextChoices):
    APPLIED = "applied", "Applied"
    # An overturn replaced the decision before its turn came: its effect handler was not
    # called, because the receiver must end on the standing verdict (docs/architecture.md).
    SUPERSEDED = "superseded", "Superseded before it ran (effect not run)"


class AppliedDecision(models.Model):
    """Proof a decision's effect was carried out; inserted ON CONFLICT DO NOTHING with it."""

    decision = models.OneToOneField(
        Decision, primary_key=True, on_delete=models.PROTECT, related_name="applied"
    )
    applied_at = models.DateTimeField(auto_now_add=True)
    outcome = models.JSONField(default=dict, blank=True)
    # A database default: rows written before the column existed, and raw inserts that do
    # not name it, are what they always were (the effect ran).
    status = models.CharField(
        max_length=16,
        choices=AppliedStatus.choices,
        default=AppliedStatus.APPLIED,
        db_default=AppliedStatus.APPLIED,
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in AppliedStatus]),
                name="applieddecision_status_valid",
            ),
        ]
        indexes = [
            # The admin's list of applied effects, latest first (the pk breaks ties), read
            # from here rather than sorting every effect ever applied.
            models.Index(fields=["applied_at", "decision"], name="applied_at_recent"),
        ]

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
    ATTACHMENT_PUT = "attachment_put", "Attachment added or replaced"
    ATTACHMENT_REVEALED = "attachment_revealed", "Sensitive image revealed"
    HELD = "held", "Put on hold"
    RESUMED = "resumed", "Back from hold"
    # Second-person controls (queue_app/second_person.py).
    CHECK_CONFIRMED = "check_confirmed", "Check confirmed"
    CHECK_RETURNED = "check_returned", "Check returned"
    QA_REVIEWED = "qa_reviewed", "QA reviewed"
    ADJUDICATED = "adjudicated", "Adjudicated"
    # Machine suggestions: a reviewer asked to see one; the machine decided at intake.
    SUGGESTION_REVEALED = "suggestion_revealed", "Suggestion revealed"
    AUTO_DECIDED = "auto_decided", "Decided automatically"
    # Appeals (models/appeals.py): a complaint arrived; a person decided it.
    APPEAL_RECEIVED = "appeal_received", "Appeal received"
    APPEAL_DECIDED = "appeal_decided", "Appeal decided"


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
        return f"Chain {'verified' if self.ok else 'BROKEN'} at {local_text(self.ran_at)}"


class ChainBatch(models.Model):
    """A sealed batch of decisions (and second-person outcomes, after them): a Merkle root over
    them, chained to the batch before it.

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
        return f"Sealed batch #{self.seq} ({self.size} decisions and outcomes)"


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


class DecisionTally(models.Model):
    """How many decisions a reviewer made in one day (UTC midnight to midnight), queue and verdict.

    Written only by the trigger on each decision (queue_app_decision_tally), so My work's window
    counts read a row per day, queue and verdict instead of every decision; keyed by reviewer
    first, so no two reviewers ever update one row. Decisions are append-only: a row only grows.
    """

    pk = models.CompositePrimaryKey("reviewer_id", "day", "queue_id", "verdict")
    reviewer_id = models.IntegerField()
    day = models.DateTimeField()  # the UTC midnight the day starts at
    queue_id = models.BigIntegerField()
    verdict = models.CharField(max_length=16)
    decisions = models.IntegerField()

    def __str__(self) -> str:
        return f"{self.decisions} {self.verdict} by #{self.reviewer_id} on {self.day:%Y-%m-%d}"


class CheckTally(models.Model):
    """How many checks a checker finished in one day (UTC), queue and result.

    Written only by the trigger on each check outcome (queue_app_laneoutcome_check_tally), so
    the return rate over 30 days (/metrics, /ops/) reads a row per checker, queue, result and
    day instead of every outcome with its task. Keyed by day first, so a window is one range
    read in the order rows are written; the checker in the key keeps two checkers off one row.
    """

    pk = models.CompositePrimaryKey("day", "queue_id", "result", "checker_id")
    day = models.DateTimeField()  # the UTC midnight the day starts at
    queue_id = models.BigIntegerField()
    result = models.CharField(max_length=16)
    checker_id = models.IntegerField()
    checks = models.IntegerField()

    def __str__(self) -> str:
        return f"{self.checks} {self.result} by #{self.checker_id} on {self.day:%Y-%m-%d}"


class LaneOutcomeEntry(models.Model):
    """A second person's outcome (a check, QA review or adjudication) in a sealed batch.

    Sealed into the same batches as decisions, after them: its position follows the batch's
    decisions in one Merkle tree, so one checkpoint anchors both.
    """

    outcome = models.OneToOneField(
        "queue_app.LaneOutcome", primary_key=True, on_delete=models.PROTECT, related_name="seal"
    )
    batch = models.ForeignKey(ChainBatch, on_delete=models.PROTECT, related_name="outcome_entries")
    position = models.PositiveIntegerField()
    # The leaf as sealed (as ChainEntry.leaf).
    leaf = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["batch", "position"], name="laneoutcomeentry_position")
        ]

    def __str__(self) -> str:
        return f"Outcome of lane task #{self.outcome_id} at {self.batch_id}/{self.position}"


class UnsealedLaneOutcome(models.Model):
    """Work for the sealer: a committed lane outcome not yet in a batch (written by a trigger)."""

    outcome = models.OneToOneField(
        "queue_app.LaneOutcome", primary_key=True, on_delete=models.PROTECT, related_name="+"
    )

    def __str__(self) -> str:
        return f"Outcome of lane task #{self.outcome_id} (unsealed)"


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
    # Who created the client, and so holds its token: under four eyes its service user's
    # decisions count as this person's. NULL when not known (made outside the admin, or
    # before creators were recorded and not in the admin log).
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        editable=False,
        on_delete=models.PROTECT,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        # As the README spells it (Django would say "Api clients").
        verbose_name = "API client"
        verbose_name_plural = "API clients"

    def __str__(self) -> str:
        return f"{self.name} ({self.token_prefix}…)"


class ReviewSession(AbstractBaseSession):
    """A browser's session: Django's session row, with the user it signs in beside the data.

    Every signed-in request reads its session and then its user. With the user's id in a
    column, queue_app/identity/sessions.py reads both in one statement
    (identity_sql.SESSION_WITH_USER) instead of two, and a user's sessions can be found without
    decoding every row. The column is written from the data on every save
    (SessionStore.create_model_instance); the data stays what decides who is signed in, so a column
    that disagrees with it only costs the second read back.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        # A deleted user's sessions go with them. No foreign key in the database: a session
        # saved while its user is being deleted must not fail the request that saves it (it
        # names no one the join can find, so it signs no one in).
        on_delete=models.CASCADE,
        db_constraint=False,
        related_name="+",
    )

    class Meta(AbstractBaseSession.Meta):  # type: ignore[name-defined]  # the stubs omit Meta
        db_table = "queue_app_session"

    @classmethod
    def get_session_store_class(cls) -> type:
        # The configured engine, as Django's session middleware finds it: the store is the
        # sign-in layer's, and the model layer names no module above it.
        return import_module(settings.SESSION_ENGINE).SessionStore


class SignOnLink(models.Model):
    """Which local account a provider's account signs in as: the issuer and its stable subject.

    Written at a provider account's first sign-in, with the account created for it then
    (queue_app/identity/oidc.py), or by an operator on purpose (`manage.py link_sign_on`). An
    e-mail address is never a link: anyone who can set theirs at the provider would otherwise
    sign in as the local account that has it. Changes are in the access history.
    """

    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sign_on_links"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="signonlink_one_account"),
        ]
        verbose_name = "single sign-on link"

    def __str__(self) -> str:
        return f"{self.issuer} {self.subject} → user {self.user_id}"
