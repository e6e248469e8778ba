"""The demo's transaction-screening queue: items that come with a model's suggestion, and a
decided history that gives the oversight figures on /ops/ something to say.

The history is what the queue would have recorded over past weeks: people deciding with the
suggestion shown, revealed before or after their own choice, or hidden, and the model deciding
on its own above the queue's threshold (the database accepts those only from the queue's
automation user, at or above its confidence, as the suggested verdict). It is written as
rows, the decided item with its decision, its effect job and its events, because the history
of views cannot be replayed through today's page. A share of the automatic decisions is then
reviewed blind by carol, through the QA lane's service. The model is wrong on purpose now and
then, more often than its confidence says in 0.90-0.95; alice follows what she is shown.
Seeded once: a queue with any decision keeps its history.
"""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from queue_app.evidence import item_evidence_hash
from queue_app.models import (
    Decision,
    EffectJob,
    ItemEvent,
    ItemEventKind,
    ItemState,
    LaneKind,
    LaneTask,
    Queue,
    ReasonCode,
    ReviewItem,
    SuggestionDisplay,
    SuggestionView,
    Verdict,
)
from queue_app.services import claim_lane_task, record_qa_review

SLUG = "transaction-screening"
MODEL_USER = "screening-model"
MODEL = {"name": "txn-risk", "version": "2026.11.2"}
# The queue's automation: the model decides at or above this confidence; a fifth of those are
# drawn for blind QA (the database requires a rate with a threshold).
AUTO_ABOVE = Decimal("0.97")
AUTO_QA_RATE = Decimal("20.00")

REASONS: dict[str, list[tuple[str, str]]] = {
    Verdict.APPROVE: [
        ("consistent_with_profile", "Consistent with the customer's profile"),
        ("known_counterparty", "Known, established counterparty"),
    ],
    Verdict.REJECT: [
        ("suspected_fraud", "Suspected fraud"),
        ("sanctions_exposure", "Sanctions exposure"),
        ("structuring", "Structuring to stay under thresholds"),
    ],
    Verdict.ESCALATE: [("needs_investigation", "Needs an investigation")],
    Verdict.OVERTURN: [
        ("reviewer_error", "Reviewer error"),
        ("new_information", "New information received"),
    ],
}

COUNTERPARTIES = [
    ("Northwind Traders", "GB"),
    ("Contoso Pharma", "DE"),
    ("Fabrikam Metals", "PL"),
    ("Tailspin Travel", "ES"),
    ("Blue Yonder Freight", "NL"),
    ("Lamna Crypto OTC", "AE"),
    ("Orion Shell Holdings", "CY"),
    ("Wingtip Imports", "HK"),
]
CHANNELS = ["SEPA instant", "SWIFT", "Card not present", "Faster Payments", "Crypto off-ramp"]
# The people of the demo and how they work: alice follows a suggestion she has seen nearly
# always; bob and carol judge the item whatever they were shown.
FOLLOWS_WHAT_SHE_SEES = "alice"
PEOPLE = ["alice", "bob", "carol"]
# People's history, open items and the QA reviewer of automatic decisions.
HISTORY = 160
OPEN = 12
QA_REVIEWER = "carol"


def screening_queue(escalation: Queue) -> tuple[Queue, User]:
    """The queue, its reason codes and its automation user (created once, then left alone)."""
    model_user, created = User.objects.get_or_create(
        username=MODEL_USER,
        defaults={"first_name": "Transaction risk model", "email": "txn-risk@example.test"},
    )
    if created:
        model_user.set_unusable_password()
        model_user.save()
    queue, _ = Queue.objects.get_or_create(
        slug=SLUG,
        defaults={
            "name": "Transaction screening",
            "escalation_queue": escalation,
            "description": "Payments a risk model flagged, with its suggestion and the why.",
            "default_sla": timedelta(hours=4),
            "suggestion_display": SuggestionDisplay.ON_REQUEST,
            "auto_decide_above": AUTO_ABOVE,
            "auto_decide_user": model_user,
            "auto_decide_qa_rate": AUTO_QA_RATE,
        },
    )
    for verdict, codes in REASONS.items():
        for code, label in codes:
            ReasonCode.objects.get_or_create(
                queue=queue, verdict=verdict, code=code, defaults={"label": label}
            )
    return queue, model_user


def _transaction(rng: random.Random, n: int) -> tuple[str, dict[str, Any], str]:
    """A flagged payment, and what a careful reviewer would decide (approve or reject)."""
    name, country = rng.choice(COUNTERPARTIES)
    amount = Decimal(rng.randint(5_000, 2_500_000)) / 100
    velocity = rng.randint(1, 40)
    new_payee = rng.random() < 0.4
    bad = (country in {"AE", "CY", "HK"} and velocity > 15) or (new_payee and amount > 15_000)
    if rng.random() < 0.15:  # the signals do not tell the whole story
        bad = not bad
    payload = {
        "transaction_id": f"TX-{20261100000 + n}",
        "amount": f"{amount:.2f}",
        "currency": rng.choice(["EUR", "GBP", "USD"]),
        "counterparty": name,
        "counterparty_country": country,
        "channel": rng.choice(CHANNELS),
        "payments_last_24h": velocity,
        "new_payee": new_payee,
    }
    return f"TX-{20261100000 + n} — {name}, {amount:.2f}", payload, "reject" if bad else "approve"


def _suggestion(rng: random.Random, truth: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The model's suggestion: about as often right as its confidence says, except where it is
    overconfident: seven times in ten between 0.90 and 0.95, and at the automatic threshold
    and above, where blind QA should catch it, nine in ten."""
    confidence = Decimal(rng.choice([rng.randint(30, 89), rng.randint(90, 100)])) / 100
    chance = float(confidence)
    if Decimal("0.9") <= confidence < Decimal("0.95"):
        chance = 0.7
    elif confidence >= AUTO_ABOVE:
        chance = 0.9
    right = rng.random() < chance
    verdict = truth if right else ("approve" if truth == "reject" else "reject")
    reason = REASONS[verdict][0 if payload["new_payee"] or verdict == "approve" else 1][0]
    return {
        "verdict": verdict,
        "reason_code": reason,
        "confidence": f"{confidence:.2f}",
        "model": MODEL,
        "explanation": [
            {"factor": "payments_last_24h", "value": payload["payments_last_24h"]},
            {"factor": "counterparty_country", "value": payload["counterparty_country"]},
            {"factor": "new_payee", "value": payload["new_payee"]},
        ],
    }


def _new_item(
    queue: Queue,
    n: int,
    subject: str,
    payload: dict[str, Any],
    suggestion: dict[str, Any],
    **state: Any,
) -> ReviewItem:
    item = ReviewItem.objects.create(
        queue=queue,
        intake_queue=queue,
        subject=subject,
        payload=payload,
        idempotency_key=f"demo-{SLUG}-{n}",
        source_hash=f"demo-{SLUG}-{n}",
        trace_id=uuid.uuid4(),
        subject_key=f"ACC-{n % 17:05d}",
        suggestion=suggestion,
        **state,
    )
    # Strings, ints and booleans only: the row reads back as written, so this is its hash.
    item.evidence_hash = item_evidence_hash(item)
    item.save(update_fields=["evidence_hash"])
    ItemEvent.objects.create(item=item, kind=ItemEventKind.CREATED, detail={})
    return item


def _record(
    item: ReviewItem, suggestion: dict[str, Any], reviewer: User, verdict: str, view: str
) -> Decision:
    """The decision as the decide would have written it, with what its maker saw."""
    followed = verdict == suggestion["verdict"]
    code = suggestion["reason_code"] if followed else REASONS[verdict][0][0]
    on_page = view in (
        SuggestionView.SHOWN,
        SuggestionView.REVEALED_BEFORE_CHOICE,
        SuggestionView.REVEALED_AFTER_CHOICE,
    )
    decision = Decision.objects.create(
        item=item,
        queue=item.queue,
        reviewer=reviewer,
        verdict=verdict,
        reason_code=ReasonCode.objects.get(queue=item.queue, verdict=verdict, code=code),
        evidence_hash=item_evidence_hash(item),
        lease_token=uuid.uuid4(),
        suggestion_view=view,
        suggestion_shown_at=timezone.now() if on_page else None,
    )
    EffectJob.objects.create(decision=decision, queue=item.queue, next_attempt_at=timezone.now())
    kind = ItemEventKind.AUTO_DECIDED if view == SuggestionView.AUTOMATIC else ItemEventKind.DECIDED
    ItemEvent.objects.create(
        item=item,
        kind=kind,
        actor=reviewer,
        detail={"decision_id": decision.pk, "verdict": verdict, "awaiting_check": False},
    )
    return decision


SEEN = (SuggestionView.SHOWN, SuggestionView.REVEALED_BEFORE_CHOICE)


def _view(rng: random.Random, person: str) -> str:
    """What the person saw: the queue's policy at the time (shown, hidden or on request), and
    on request, whether they asked before choosing; alice nearly always asks first."""
    policy = rng.choices(["shown", "hidden", "on_request"], weights=[3, 3, 4])[0]
    if policy == "shown":
        return SuggestionView.SHOWN
    if policy == "hidden":
        return SuggestionView.NOT_SHOWN
    first = 0.9 if person == FOLLOWS_WHAT_SHE_SEES else 0.2
    if rng.random() < first:
        return SuggestionView.REVEALED_BEFORE_CHOICE
    return SuggestionView.REVEALED_AFTER_CHOICE


def _persons_verdict(rng: random.Random, person: str, view: str, truth: str, suggested: str) -> str:
    if view in SEEN and person == FOLLOWS_WHAT_SHE_SEES:
        return suggested
    if view in SEEN and rng.random() < 0.3:  # even the careful ones lean a little
        return suggested
    # Their own judgement: right nine times in ten.
    return truth if rng.random() < 0.9 else ("approve" if truth == "reject" else "reject")


def seed_screening(escalation: Queue) -> tuple[Queue, int]:
    """Create the queue, its open items and (once) its decided history; return the queue and
    how many decisions were made now."""
    queue, model_user = screening_queue(escalation)
    rng = random.Random(20261206)
    people = {u.username: u for u in User.objects.filter(username__in=PEOPLE)}
    made = 0
    truths: dict[int, str] = {}  # what the careful answer was, per decided item
    with transaction.atomic():
        seeded = Decision.objects.filter(queue=queue).exists()
        for n in range(HISTORY + OPEN):
            subject, payload, truth = _transaction(rng, n)
            suggestion = _suggestion(rng, truth, payload)
            person = rng.choice(PEOPLE)
            view = _view(rng, person)
            verdict = _persons_verdict(rng, person, view, truth, suggestion["verdict"])
            if ReviewItem.objects.filter(idempotency_key=f"demo-{SLUG}-{n}", queue=queue).exists():
                continue
            if n >= HISTORY:
                # Open work, with its suggestion for the reviewer's page; one the model is this
                # sure of would have been decided at intake.
                if Decimal(suggestion["confidence"]) < AUTO_ABOVE:
                    # Deadlines from half an hour overdue to four hours ahead (the queue's SLA).
                    due = timezone.now() + timedelta(minutes=(n * 37) % 270 - 30)
                    _new_item(queue, n, subject, payload, suggestion, due_at=due)
                continue
            if seeded:
                continue
            now = timezone.now()
            item = _new_item(
                queue,
                n,
                subject,
                payload,
                suggestion,
                state=ItemState.DECIDED,
                decided_at=now,
                lease_count=1,
            )
            truths[item.pk] = truth
            if Decimal(suggestion["confidence"]) >= AUTO_ABOVE:
                _record(
                    item, suggestion, model_user, suggestion["verdict"], SuggestionView.AUTOMATIC
                )
            else:
                _record(item, suggestion, people[person], verdict, view)
            made += 1
        if not seeded:
            _qa_of_automatic(queue, people[QA_REVIEWER], truths)
    return queue, made


def _qa_of_automatic(queue: Queue, reviewer: User, truths: dict[int, str]) -> None:
    """Draw every other automatic decision for blind QA and have the reviewer judge each
    through the QA lane's service: the careful answer, so a wrong machine call is a
    disagreement (which opens an adjudication, as it would)."""
    automatic = Decision.objects.filter(queue=queue, suggestion_view=SuggestionView.AUTOMATIC)
    for decision in list(automatic.order_by("id"))[::2]:
        LaneTask.objects.create(
            kind=LaneKind.QA,
            queue=queue,
            item_id=decision.item_id,
            decision=decision,
            maker_id=decision.reviewer_id,
            state="open",
            lease_count=0,
        )
        task = claim_lane_task(queue=queue, kind=LaneKind.QA, user=reviewer)
        if task is None or task.decision_id != decision.pk or task.lease_token is None:
            raise RuntimeError(f"{reviewer.username} could not take the QA review of {decision}")
        verdict = truths[decision.item_id]
        record_qa_review(
            task_id=task.pk,
            user=reviewer,
            lease_token=task.lease_token,
            verdict=verdict,
            reason_code=REASONS[verdict][0][0],
        )
