"""Create demo queues, reason codes, users and a few hundred realistic items. Idempotent."""

from __future__ import annotations

import os
import random
import secrets
from datetime import timedelta
from decimal import Decimal

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand
from django.db import transaction

from queue_app.admin.permissions import admin_group_permissions
from queue_app.models import EvidenceRule, Queue, ReasonCode, RuleTest, Verdict
from queue_app.services import create_item

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
ENTITIES = ["ACME-CORP", "GLOBEX-LTD", "INITECH-GMBH", "UMBRELLA-BV", "STARK-INC", "WAYNE-ENT"]


def kyc_item(rng: random.Random, n: int) -> tuple[str, dict]:
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
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
        "notes": "Applicant onboarded via mobile app; address proof uploaded separately.",
    }
    return f"KYC check — {name}", payload


def reconciliation_item(rng: random.Random, n: int) -> tuple[str, dict]:
    entity = rng.choice(ENTITIES)
    match = rng.choices(["MATCHED", "PARTIAL", "UNMATCHED"], weights=[3, 4, 3])[0]
    expected = Decimal(rng.randint(1_000, 50_000_000)) / 100
    variance = (
        Decimal(0)
        if match == "MATCHED" and rng.random() < 0.6
        else Decimal(rng.randint(-99_999, 99_999)) / 100
    )
    payload = {
        "ledger_entity": entity,
        "variance_amount": variance.quantize(Decimal("0.01")),
        "match_decision": match,
        "currency": rng.choice(["EUR", "GBP", "USD"]),
        "ledger_amount": expected.quantize(Decimal("0.01")),
        "bank_amount": (expected + variance).quantize(Decimal("0.01")),
        "statement_date": f"2026-11-{rng.randint(1, 28):02d}",
        "bank_reference": f"BR{rng.randint(100000, 999999)}",
    }
    if n == 0:
        # One item that exercises exact decimals end to end.
        payload["variance_amount"] = Decimal("12345678901234.57")
        payload["ledger_amount"] = Decimal("0.10")
    return f"{entity} statement {payload['bank_reference']} ({match})", payload


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
            },
        )
        recon, _ = Queue.objects.get_or_create(
            slug="reconciliation",
            defaults={
                "name": "Reconciliation exceptions",
                "escalation_queue": escalation,
                "description": "Bank statement lines that did not match the ledger.",
            },
        )
        queues = {"kyc": kyc, "reconciliation": recon, "escalation": escalation}
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
        made = 0
        for n in range(items):
            for slug, builder in (("kyc", kyc_item), ("reconciliation", reconciliation_item)):
                subject, payload = builder(rng, n)
                _, created = create_item(
                    queue=queues[slug],
                    subject=subject,
                    payload=payload,
                    idempotency_key=f"demo-{slug}-{n}",
                    source_hash=f"demo-{slug}-{n}",
                    priority=rng.choice([0, 0, 0, 5, 10]),
                )
                made += created
        self.stdout.write(f"Seeded demo data: {made} new items.")
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
