"""Create demo queues, reason codes, users and a few hundred realistic items. Idempotent."""

from __future__ import annotations

import os
import random
import secrets
import uuid
from datetime import timedelta
from decimal import Decimal
from typing import cast

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from queue_app import chain
from queue_app.admin.permissions import admin_group_permissions
from queue_app.evidence import item_evidence_hash
from queue_app.management.moderation_demo import moderation_queue, seed_moderation
from queue_app.management.screening_demo import screening_queue, seed_screening
from queue_app.models import (
    CheckPolicy,
    EvidenceRule,
    HoldReason,
    LaneKind,
    LaneTask,
    Queue,
    ReasonCode,
    RuleTest,
    Verdict,
)
from queue_app.services import claim_next, create_item, submit_decision

REASONS: dict[str, dict[str, list[tuple[str, str]]]] = {
    "kyc": {
        Verdict.APPROVE: [
            ("identity_verified", "Identity verified"),
            ("low_risk_match", "Watchlist hit is a false positive"),
        ],
        Verdict.REJECT: [
            ("document_expired", "Document expired"),
            ("document_tampered", "Document appears altered"),
            ("sanctions_match", "Confirmed sanctions match"),
            ("face_mismatch", "Selfie does not match document"),
        ],
        Verdict.ESCALATE: [
            ("needs_edd", "Needs enhanced due diligence"),
            ("policy_gap", "Not covered by policy"),
        ],
        Verdict.OVERTURN: [
            ("reviewer_error", "Reviewer error"),
            ("new_information", "New information received"),
        ],
    },
    "reconciliation": {
        Verdict.APPROVE: [
            ("timing_difference", "Timing difference, clears next cycle"),
            ("within_tolerance", "Variance within tolerance"),
        ],
        Verdict.REJECT: [
            ("missing_entry", "Missing ledger entry"),
            ("duplicate_posting", "Duplicate posting"),
            ("fx_error", "Wrong FX rate applied"),
        ],
        Verdict.ESCALATE: [("material_variance", "Material variance, needs controller")],
        Verdict.OVERTURN: [
            ("reviewer_error", "Reviewer error"),
            ("new_information", "New information received"),
        ],
    },
    "escalation": {
        Verdict.APPROVE: [("senior_approved", "Approved by senior reviewer")],
        Verdict.REJECT: [("senior_rejected", "Rejected by senior reviewer")],
        Verdict.OVERTURN: [("reviewer_error", "Reviewer error")],
    },
}

# The one reason per verdict a demo queue preselects. Only approve has one: reject and escalate
# reasons differ in consequence (a sanctions match is not an expired document), so a reviewer
# always chooses those.
SAFE_DEFAULTS = [("kyc", Verdict.APPROVE, "identity_verified")]

# Warnings the item page shows at the top of the evidence (queue_app.rules).
EVIDENCE_RULES: dict[str, list[tuple[str, str, str, str]]] = {
    "kyc": [
        ("document.expires", RuleTest.DATE_PAST, "", "Document has expired"),
        (
            "provider.document_authenticity",
            RuleTest.IN_LIST,
            "fail",
            "Document authenticity failed",
        ),
        ("provider.liveness_score", RuleTest.BELOW, "0.5", "Liveness score below 0.5"),
    ],
}

FIRST = [
    "Amara",
    "Jonas",
    "Mei",
    "Tomasz",
    "Lucía",
    "Kwame",
    "Ingrid",
    "Ravi",
    "Sofia",
    "Omar",
    "Hana",
    "Pieter",
    "Chloé",
    "Dmitri",
    "Aisha",
    "Mateo",
]
LAST = [
    "Okafor",
    "Lindqvist",
    "Chen",
    "Nowak",
    "García",
    "Mensah",
    "Berg",
    "Iyer",
    "Rossi",
    "Haddad",
    "Sato",
    "de Vries",
    "Martin",
    "Volkov",
    "Khan",
    "Silva",
]
COUNTRIES = ["GB", "DE", "NL", "PL", "ES", "NG", "SE", "IN", "IT", "AE", "JP", "FR", "BR"]
ONBOARDING = [
    "Onboarded via the mobile app; proof of address uploaded separately.",
    "Opened in branch; documents scanned by staff at the counter.",
    "Web onboarding; the first document photo was blurred and a second one was requested.",
    "Existing customer re-verifying after a change of name.",
    "Business owner verified as a director for a new company account.",
    "Referred by the fraud team after three failed log-ins from a new device.",
]
# Ledger entities and the name on the bank line for each.
ENTITIES = {
    "ACME-CORP": "Acme Corporation plc",
    "GLOBEX-LTD": "Globex Ltd",
    "INITECH-GMBH": "Initech GmbH",
    "UMBRELLA-BV": "Umbrella B.V.",
    "STARK-INC": "Stark Industries Inc",
    "WAYNE-ENT": "Wayne Enterprises",
}
RAILS = [
    "SEPA credit transfer",
    "Faster Payments",
    "SWIFT MT103",
    "Direct debit",
    "Card settlement",
]


# Why an item may wait, per queue: the closed set the hold form offers.
HOLD_REASONS = {
    "kyc": [
        ("awaiting_documents", "Awaiting documents from the customer"),
        ("awaiting_verifier", "Awaiting the verification provider"),
    ],
    "reconciliation": [
        ("awaiting_bank", "Awaiting the bank's statement correction"),
        ("awaiting_counterparty", "Awaiting the counterparty"),
    ],
    "escalation": [("awaiting_legal", "Awaiting legal advice")],
}


# Second-person controls in the reconciliation queue: writing off a variance of
# 10,000.00 or more needs a checker, and a share of effective decisions is drawn for blind QA.
CHECK_THRESHOLD = Decimal("10000.00")
# High for a demo: the draw is random (queue_app.second_person.qa_draw) and bob decides until a QA
# review is waiting, at most one decision per item. A demo of 20 items has some 14 decisions
# that may be drawn; none is with odds of 1 in 16,000 at 50 % (at 25 %, 1 in 55: too often
# for a demo, or a test of one).
QA_RATE = Decimal("50.00")
# The demo maker: bob decides a few reconciliation items, so alice or carol (never bob) has a
# check and a QA review waiting on the home page.
DEMO_MAKER = "bob"


def applicant_names(count: int) -> list[str]:
    """Return count different names: every first x last pairing once, in a fixed shuffle."""
    pairs = [(first, last) for first in FIRST for last in LAST]
    random.Random(1129).shuffle(pairs)
    names = []
    for n in range(count):
        first, last = pairs[n % len(pairs)]
        # Past every pairing (256), a middle initial keeps names apart: A., B., ...
        initial = n // len(pairs)
        names.append(f"{first} {chr(64 + initial)}. {last}" if initial else f"{first} {last}")
    return names


def kyc_item(rng: random.Random, name: str) -> tuple[str, dict]:
    hits = (
        []
        if rng.random() < 0.7
        else [
            {
                "list": rng.choice(["OFAC SDN", "EU Consolidated", "UK HMT", "PEP (Tier 2)"]),
                "matched_name": name.upper(),
                "score": Decimal(f"0.{rng.randint(60, 99)}"),
            }
        ]
    )
    payload = {
        "applicant": {
            "name": name,
            "date_of_birth": f"19{rng.randint(55, 99)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
            "nationality": rng.choice(COUNTRIES),
        },
        "document": {
            "type": rng.choice(["passport", "national_id", "driving_licence"]),
            "number": f"{rng.choice('PXKL')}{rng.randint(10_000_000, 99_999_999)}",
            "expires": f"20{rng.randint(24, 34)}-0{rng.randint(1, 9)}-2{rng.randint(0, 8)}",
        },
        "provider": {
            "name": "VerifyCo",
            "liveness_score": Decimal(f"0.{rng.randint(40, 99)}"),
            "document_authenticity": rng.choice(["pass", "pass", "pass", "review", "fail"]),
        },
        "watchlist_hits": hits,
        "notes": rng.choice(ONBOARDING),
    }
    return f"KYC check — {name}", payload


def _variance(rng: random.Random, match: str, ledger: Decimal) -> Decimal:
    """How far the bank line is from the ledger, as each kind of exception typically is."""
    if match == "MATCHED":  # matched on reference; at most a rounding or fee difference
        return rng.choice([Decimal(0), Decimal(rng.randint(1, 250)) / 100])
    if match == "PARTIAL":  # paid short (charges, FX) or, now and then, paid twice over
        return ledger * Decimal(rng.choice([1, 1, 1, -1]) * rng.randint(1, 40)) / 100
    # UNMATCHED: the ledger entry has no bank line at all, or a bank line has no entry.
    return ledger if rng.random() < 0.5 else -ledger


def reconciliation_item(rng: random.Random, n: int) -> tuple[str, dict]:
    entity = rng.choice(list(ENTITIES))
    match = rng.choices(["MATCHED", "PARTIAL", "UNMATCHED"], weights=[3, 4, 3])[0]
    ledger = (Decimal(rng.randint(1_000, 50_000_000)) / 100).quantize(Decimal("0.01"))
    variance = _variance(rng, match, ledger).quantize(Decimal("0.01"))
    if n == 0:
        # One item that exercises exact decimals end to end (beyond a float's 15-16 digits).
        match = "PARTIAL"
        ledger, variance = Decimal("12345678901234.67"), Decimal("12345678901234.57")
    reference = f"BR{rng.randint(100000, 999999)}"
    payload = {
        "ledger_entity": entity,
        # Variance is ledger minus bank, always: the figures on the item page add up.
        "variance_amount": variance,
        "match_decision": match,
        "currency": rng.choice(["EUR", "GBP", "USD"]),
        "ledger_amount": ledger,
        "bank_amount": ledger - variance,
        "statement_date": f"2026-11-{rng.randint(1, 28):02d}",
        "bank_reference": reference,
        "counterparty": ENTITIES[entity],
        "narrative": f"{rng.choice(RAILS)} {entity[:3]}-INV-{rng.randint(10000, 99999)}",
    }
    return f"{reference} — {entity}, {match.lower()}", payload


class Command(BaseCommand):
    help = (
        "Seed demo queues, reason codes, groups, users and items. Running it twice changes nothing."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--items", type=int, default=150, help="Items per working queue.")

    @transaction.atomic
    def handle(self, *args, items: int, **options) -> None:
        escalation, _ = Queue.objects.get_or_create(
            slug="escalation",
            defaults={
                "name": "Escalations",
                "lease_ttl": timedelta(minutes=30),
                "description": "Items reviewers escalated or kept abandoning.",
            },
        )
        kyc, _ = Queue.objects.get_or_create(
            slug="kyc",
            defaults={
                "name": "KYC checks",
                "escalation_queue": escalation,
                "description": "Identity verification for new customers.",
                "default_sla": timedelta(hours=48),
            },
        )
        recon, _ = Queue.objects.get_or_create(
            slug="reconciliation",
            defaults={
                "name": "Reconciliation exceptions",
                "escalation_queue": escalation,
                "description": "Bank statement lines that did not match the ledger.",
                "default_sla": timedelta(hours=24),
            },
        )
        # Machine suggestions under oversight (queue_app/management/screening_demo.py).
        screening, _ = screening_queue(escalation)
        # Statements of reasons (queue_app/management/moderation_demo.py).
        moderation = moderation_queue(escalation)
        queues = {
            "kyc": kyc,
            "reconciliation": recon,
            "escalation": escalation,
            "transaction-screening": screening,
            "content-moderation": moderation,
        }
        for slug, by_verdict in REASONS.items():
            for verdict, codes in by_verdict.items():
                for code, label in codes:
                    ReasonCode.objects.get_or_create(
                        queue=queues[slug], verdict=verdict, code=code, defaults={"label": label}
                    )
        for slug, verdict, code in SAFE_DEFAULTS:
            # Only where the queue has no default for the verdict yet (an admin's choice stands).
            if not ReasonCode.objects.filter(
                queue=queues[slug], verdict=verdict, is_default=True
            ).exists():
                ReasonCode.objects.filter(queue=queues[slug], verdict=verdict, code=code).update(
                    is_default=True
                )
        for slug, rules in EVIDENCE_RULES.items():
            for path, test, value, message in rules:
                EvidenceRule.objects.get_or_create(
                    queue=queues[slug],
                    path=path,
                    test=test,
                    value=value,
                    defaults={"message": message},
                )

        # Maker-checker and QA in the reconciliation queue. On a queue seeded before these
        # existed, the QA rate is set once with the policy; an admin's later choice stands.
        _, new_policy = CheckPolicy.objects.get_or_create(
            queue=recon,
            verdict=Verdict.APPROVE,
            path="variance_amount",
            defaults={"threshold": CHECK_THRESHOLD},
        )
        if new_policy and not recon.qa_rate:
            recon.qa_rate = QA_RATE
            recon.save(update_fields=["qa_rate"])

        for slug, reasons in HOLD_REASONS.items():
            for code, label in reasons:
                HoldReason.objects.get_or_create(
                    queue=queues[slug], code=code, defaults={"label": label}
                )

        reviewers, _ = Group.objects.get_or_create(name="Reviewers")
        admins, _ = Group.objects.get_or_create(name="Admins")
        admins.permissions.set(admin_group_permissions())
        for queue in queues.values():
            queue.reviewer_groups.add(reviewers, admins)

        password = os.environ.get("DEMO_PASSWORD")
        created_any = False
        generated = password or secrets.token_urlsafe(12)
        for username, is_admin in [
            ("admin", True),
            ("alice", False),
            ("bob", False),
            ("carol", False),
        ]:
            user, created = User.objects.get_or_create(
                username=username,
                defaults={
                    "is_staff": is_admin,
                    "is_superuser": is_admin,
                    "first_name": username.capitalize(),
                    "email": f"{username}@example.test",
                },
            )
            # An explicit DEMO_PASSWORD is (re)applied to existing demo users too: it is how
            # someone who missed the generated password printed on the first run gets back in.
            if created or (password and not user.check_password(password)):
                user.set_password(generated)
                user.save()
                created_any = created_any or created
            user.groups.add(admins if is_admin else reviewers)

        rng = random.Random(20261129)
        # Deadlines and subject keys from their own generator: the payloads stay as they were.
        clocks = random.Random(15)
        now = timezone.now()
        names = applicant_names(items)
        made = 0
        for n in range(items):
            for slug in ("kyc", "reconciliation"):
                subject, payload = (
                    kyc_item(rng, names[n]) if slug == "kyc" else reconciliation_item(rng, n)
                )
                _, created = create_item(
                    queue=queues[slug],
                    subject=subject,
                    payload=payload,
                    idempotency_key=f"demo-{slug}-{n}",
                    source_hash=f"demo-{slug}-{n}",
                    priority=rng.choice([0, 0, 0, 5, 10]),
                    # Customers recur across both queues (a few items each), so an item page
                    # shows the subject's history; deadlines from 4 h overdue to 3 days ahead.
                    subject_key=f"CUS-{clocks.randrange(max(items // 3, 1)):05d}",
                    due_at=now + timedelta(minutes=clocks.randint(-240, 72 * 60)),
                )
                made += created
        attached = self._attach_demo_documents(items)
        decided = self._second_person_demo(recon, items)
        # After the users: the history names alice, bob and carol.
        _, screened = seed_screening(escalation)
        # Decided posts with statements of reasons, delivered to stand-ins (in this process).
        _, moderated, submitted = seed_moderation(escalation)
        # The demo's decisions are sealed with them, so the audit export shows each one's link
        # from the start; the apply worker (make run starts one) seals every later decision.
        sealed = chain.seal_all(wait=True)
        self.stdout.write(
            f"Seeded demo data: {made} new items, {attached} new attachments, "
            f"{decided} new decisions by {DEMO_MAKER} for the Checks and QA lanes, "
            f"{screened} in the transaction-screening history, "
            f"{moderated} in content moderation with {submitted} statement(s) of reasons "
            "submitted to a stand-in Transparency Database "
            f"({sealed} sealed into the decision log)."
        )
        if password:
            self.stdout.write(
                "Demo users admin, alice, bob and carol: password set from DEMO_PASSWORD."
            )
        elif created_any:
            self.stdout.write(
                self.style.WARNING(
                    "Demo users admin, alice, bob and carol were created with password: "
                    f"{generated}\n"
                    "(shown once; set DEMO_PASSWORD to choose it)."
                )
            )
        else:
            self.stdout.write(
                "Demo users admin, alice, bob and carol already exist, with the password printed "
                "when they were created. Lost it? Run again with DEMO_PASSWORD=<new password>."
            )

    def _second_person_demo(self, recon: Queue, items: int) -> int:
        """Have bob decide reconciliation items until a check and a QA review are waiting.

        Through the services, as the console does: claim, then decide on the evidence shown.
        A large positive variance is written off (approve: it needs a check); a small one is
        within tolerance (approve: may be drawn for QA); anything else is rejected with its
        likely cause (may be drawn too). Stops as soon as both lanes have a task, so a rerun
        decides nothing. Returns how many decisions it made.
        """
        maker = User.objects.get(username=DEMO_MAKER)

        def waiting(kind: str) -> bool:
            return LaneTask.objects.filter(queue=recon, kind=kind).exists()

        made = 0
        while not (waiting(LaneKind.CHECK) and waiting(LaneKind.QA)) and made < items:
            item = claim_next(queue=recon, reviewer=maker)
            if item is None:
                break
            variance = item.payload["variance_amount"]
            if variance >= CHECK_THRESHOLD:
                verdict, reason = Verdict.APPROVE, "timing_difference"
            elif abs(variance) <= Decimal("2.50"):
                verdict, reason = Verdict.APPROVE, "within_tolerance"
            elif item.payload["match_decision"] == "UNMATCHED":
                verdict, reason = Verdict.REJECT, "missing_entry"
            elif variance < 0:
                verdict, reason = Verdict.REJECT, "duplicate_posting"
            else:
                verdict, reason = Verdict.REJECT, "fx_error"
            submit_decision(
                item_id=item.pk,
                reviewer=maker,
                lease_token=cast(uuid.UUID, item.lease_token),  # claimed just above
                verdict=verdict,
                reason_code=reason,
                evidence_hash=item_evidence_hash(item),
                queue_id=recon.pk,
            )
            made += 1
        return made

    def _attach_demo_documents(self, items: int) -> int:
        """Put a made-up ID card on the first few open KYC items; return how many were new."""
        from queue_app.models import ItemEventKind, ItemState, ReviewItem
        from queue_app.services import put_attachment

        admin = User.objects.get(username="admin")
        new = 0
        for n in range(min(items, DEMO_DOCUMENTS)):
            item = (
                ReviewItem.objects.filter(idempotency_key=f"demo-kyc-{n}", queue__slug="kyc")
                .exclude(state=ItemState.DECIDED)
                .first()
            )
            if item is None:
                continue
            before = item.events.filter(kind=ItemEventKind.ATTACHMENT_PUT).count()
            # Deterministic bytes: a rerun puts the same digest, which changes nothing.
            card = demo_id_card(n, item.subject)
            put_attachment(item_id=item.pk, actor=admin, name="id-front.png", data=card)
            new += item.events.filter(kind=ItemEventKind.ATTACHMENT_PUT).count() - before
        return new


# KYC items that get a demo identity card (an image attachment) from seed_demo.
DEMO_DOCUMENTS = 3


def demo_id_card(n: int, name: str) -> bytes:
    """Draw a made-up identity card for a demo applicant (PNG bytes, the same every run)."""
    import io

    from PIL import Image, ImageDraw

    image = Image.new("RGB", (480, 300), "#e8eef7")
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 480, 52), fill="#1d4f91")
    draw.text((18, 18), "DEMO REPUBLIC - IDENTITY CARD (SPECIMEN)", fill="white")
    draw.ellipse((30, 80, 150, 220), fill=("#c99a74", "#8d5b3e", "#e0b89a")[n % 3])
    draw.text((180, 90), name[:40].upper(), fill="#102040")
    draw.text((180, 130), f"NO. DEMO{4100 + n:05d}", fill="#102040")
    draw.text((180, 170), "SPECIMEN - NOT A REAL DOCUMENT", fill="#8a1c1c")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()
