"""The demo's content-moderation queue: decisions that restrict someone, with statements of reasons.

A platform's posts reported for review. Its statement policy says a rejection removes the post
(DSA Article 17) in the EU countries where the platform runs; each rejecting reason maps to a
ground, a category and keywords the Transparency Database's contract accepts (checked here as
the admin checks them, so the demo never seeds a mapping the contract refuses). alice decides a
few posts through the console's services, the statements are built as the apply worker builds
them, and their deliveries are drained once: the notices to a receiver standing in for the
platform and a batch to a stand-in Transparency Database, both in this process and gone when it
ends, so /ops/ shows the statements sent. Later decisions in the demo have no platform to notify
(their notices are dead, saying the queue has no webhook URL) and no database unless
REVIEW_TDB_URL is set (their submissions wait).
Seeded once: a queue with any decision keeps its history.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from django.contrib.auth.models import User
from django.db import transaction
from django.test import override_settings

from queue_app import delivery
from queue_app.apply import apply_batch
from queue_app.evidence import item_evidence_hash
from queue_app.management.appeal_demo import seed_waiting_appeal
from queue_app.models import (
    Decision,
    Queue,
    ReasonCode,
    ReasonMapping,
    StatementDelivery,
    StatementPolicy,
    Verdict,
)
from queue_app.services import claim_next, create_item, submit_decision
from queue_app.services.statements import policy_errors, sample_errors
from queue_app.transparency.standin import StandIn

SLUG = "content-moderation"
DECIDER = "alice"
# The variables the demo's notice secret and database token are put in while it delivers.
SECRET_ENV = "REVIEW_DEMO_NOTICE_SECRET"
TOKEN_ENV = "REVIEW_DEMO_TDB_TOKEN"

REASONS: dict[str, list[tuple[str, str]]] = {
    Verdict.APPROVE: [("no_violation", "No violation of the terms or the law")],
    Verdict.REJECT: [
        ("scam", "Scam or phishing"),
        ("hate_speech", "Illegal hate speech"),
        ("spam", "Spam"),
    ],
    Verdict.ESCALATE: [("needs_legal", "Needs a legal opinion")],
    Verdict.OVERTURN: [
        ("reviewer_error", "Reviewer error"),
        ("new_information", "New information received"),
    ],
}

TERMS = "https://platform.example/terms"
MAPPINGS: dict[str, dict[str, Any]] = {
    "scam": {
        "decision_ground": "DECISION_GROUND_INCOMPATIBLE_CONTENT",
        "ground": "Terms of service, section 4.2 (fraud and phishing)",
        "reference_url": f"{TERMS}#fraud",
        "category": "STATEMENT_CATEGORY_SCAMS_AND_FRAUD",
        "keywords": ["KEYWORD_PHISHING"],
        "explanation_template": "The post was removed under our rule on {reason}. {note}",
    },
    "hate_speech": {
        "decision_ground": "DECISION_GROUND_ILLEGAL_CONTENT",
        "ground": "Section 130 of the German Criminal Code (incitement to hatred)",
        "reference_url": "https://www.gesetze-im-internet.de/stgb/__130.html",
        "category": "STATEMENT_CATEGORY_ILLEGAL_OR_HARMFUL_SPEECH",
        "keywords": ["KEYWORD_HATE_SPEECH"],
        "explanation_template": "The post was removed as {reason}. {note}",
    },
    "spam": {
        "decision_ground": "DECISION_GROUND_INCOMPATIBLE_CONTENT",
        "ground": "Terms of service, section 3.1 (spam and platform manipulation)",
        "reference_url": f"{TERMS}#spam",
        "category": "STATEMENT_CATEGORY_OTHER_VIOLATION_TC",
        "explanation_template": "The post was removed as {reason}. {note}",
    },
    "reviewer_error": {
        "decision_ground": "DECISION_GROUND_INCOMPATIBLE_CONTENT",
        "ground": "Terms of service, section 4 (corrected on review)",
        "reference_url": TERMS,
        "category": "STATEMENT_CATEGORY_OTHER_VIOLATION_TC",
        "explanation_template": "Corrected on review: {note}",
    },
}

# (subject, payload, verdict, reason, note): decided now, in this order; None: left open.
POSTS: list[tuple[str, dict[str, Any], str | None, str | None, str]] = [
    (
        "Post 8812 in Deals & Offers",
        {
            "author": "@quickprofits_24",
            "text": "Your parcel is held at customs. Pay the 1.99 EUR fee at parcel-fee.example",
            "reported_by": "3 users",
            "posted_at": "2026-12-05T18:22:00Z",
        },
        Verdict.REJECT,
        "scam",
        "Parcel-fee phishing link to a look-alike payment page.",
    ),
    (
        "Comment 40217 under a news video",
        {
            "author": "@true_patriot_88",
            "text": "[quoted slur and call to drive a minority group out of town]",
            "reported_by": "trusted flagger",
            "posted_at": "2026-12-05T21:05:00Z",
        },
        Verdict.REJECT,
        "hate_speech",
        "Calls for violence against a protected group; not satire or reporting.",
    ),
    (
        "Post 8830 in Buy & Sell",
        {
            "author": "@bestwatches_outlet",
            "text": "REPLICA WATCHES 90% OFF!!! DM NOW!!! (posted 40 times today)",
            "reported_by": "automatic spam filter",
            "posted_at": "2026-12-06T07:40:00Z",
        },
        Verdict.REJECT,
        "spam",
        "Same advert repeated across forty threads in a day.",
    ),
    (
        "Post 8841 in Local Events",
        {
            "author": "@riverside_choir",
            "text": "Carol concert at the old church, Saturday 7 pm, free entry.",
            "reported_by": "1 user",
            "posted_at": "2026-12-06T08:15:00Z",
        },
        Verdict.APPROVE,
        "no_violation",
        "",
    ),
    (
        "Post 8850 in Deals & Offers",
        {
            "author": "@crypto_doubler",
            "text": "Send 0.1 BTC, get 0.2 back within the hour, guaranteed by our founder",
            "reported_by": "5 users",
            "posted_at": "2026-12-06T09:02:00Z",
        },
        None,
        None,
        "",
    ),
    (
        "Comment 40388 under a match report",
        {
            "author": "@ultra_fan_1907",
            "text": "The referee should be banned for life, what a disgrace.",
            "reported_by": "2 users",
            "posted_at": "2026-12-06T10:30:00Z",
        },
        None,
        None,
        "",
    ),
]


def moderation_queue(escalation: Queue) -> Queue:
    """Create (or find) the queue, its reasons, its statement policy and reason mappings."""
    queue, _ = Queue.objects.get_or_create(
        slug=SLUG,
        defaults={
            "name": "Content moderation",
            "escalation_queue": escalation,
            "description": "Posts and comments reported on the platform (DSA notices).",
            "default_sla": timedelta(hours=24),
            "webhook_secret_env": SECRET_ENV,
        },
    )
    for verdict, codes in REASONS.items():
        for code, label in codes:
            ReasonCode.objects.get_or_create(
                queue=queue, verdict=verdict, code=code, defaults={"label": label}
            )
    policy = StatementPolicy.objects.filter(queue=queue).first()
    if policy is None:
        policy = StatementPolicy(
            queue=queue,
            decision_visibility=["DECISION_VISIBILITY_CONTENT_REMOVED"],
            territorial_scope=["AT", "DE", "FR", "NL"],
            content_type=["CONTENT_TYPE_TEXT"],
            content_language="EN",
            content_date_key="posted_at",
            puid_template="{queue}-{decision_id}",
        )
        errors = policy_errors(policy=policy, queue=queue)
        if errors:
            raise RuntimeError(f"the demo's statement policy breaks the contract: {errors}")
        policy.save()
    for code, values in MAPPINGS.items():
        reason = ReasonCode.objects.get(queue=queue, code=code)
        if ReasonMapping.objects.filter(reason_code=reason).exists():
            continue
        mapping = ReasonMapping(queue=queue, reason_code=reason, **values)
        errors = sample_errors(
            policy=policy, mapping=mapping, queue_slug=queue.slug, reason_label=reason.label
        )
        if errors:
            raise RuntimeError(f"the demo's mapping of {code!r} breaks the contract: {errors}")
        mapping.save()
    return queue


def seed_moderation(escalation: Queue) -> tuple[Queue, int, int]:
    """Create the queue and (once) its decided posts with their statements, delivered; return
    the queue, how many decisions were made now and how many statements the stand-in stored."""
    queue = moderation_queue(escalation)
    if Decision.objects.filter(queue=queue).exists():
        return queue, 0, 0
    decider = User.objects.get(username=DECIDER)
    made = 0
    with transaction.atomic():
        for n, (subject, payload, verdict, reason, note) in enumerate(POSTS):
            item, _ = create_item(
                queue=queue,
                subject=subject,
                payload=payload,
                idempotency_key=f"demo-{SLUG}-{n}",
                source_hash=f"demo-{SLUG}-{n}",
            )
            if verdict is None:
                continue
            claimed = claim_next(queue=queue, reviewer=decider)
            if claimed is None or claimed.pk != item.pk:
                raise RuntimeError(f"{DECIDER} could not take {subject!r} in {SLUG}")
            submit_decision(
                item_id=claimed.pk,
                reviewer=decider,
                lease_token=cast(uuid.UUID, claimed.lease_token),  # claimed just above
                verdict=verdict,
                reason_code=cast(str, reason),
                evidence_hash=item_evidence_hash(claimed),
                note=note,
                queue_id=queue.pk,
            )
            made += 1
    # Carried out as the apply worker does: effects, then the statements of the rejections (the
    # demo's other decisions too, which the worker would apply at start), without a log line
    # per decision between the seed's lines.
    with _quiet():
        while apply_batch():
            pass
        stored = _deliver(queue)
    # An appeal waiting in the appeals lane (DSA Article 20), answering a delivered statement.
    seed_waiting_appeal(queue)
    return queue, made, stored


@contextmanager
def _quiet() -> Iterator[None]:
    """Leave out INFO and below from every logger for the block (warnings still show)."""
    logging.disable(logging.INFO)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


@contextmanager
def _environment(**values: str) -> Iterator[None]:
    """Set environment variables for the block, restoring what was there."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class _Platform(BaseHTTPRequestHandler):
    """Stands in for the platform's notice webhook: takes every notice."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _deliver(queue: Queue) -> int:
    """Drain the queue's statement deliveries once, to a platform and a database standing in
    for the real ones in this process; return how many statements the database stored."""
    token = secrets.token_urlsafe(16)
    platform = ThreadingHTTPServer(("127.0.0.1", 0), _Platform)
    platform.daemon_threads = True
    serving = threading.Thread(target=platform.serve_forever, daemon=True)
    serving.start()
    # The notices stay signed and addressed as the worker's are; the address is this process's.
    queue.webhook_url = f"http://127.0.0.1:{platform.server_address[1]}/notices"
    queue.save(update_fields=["webhook_url"])
    try:
        with (
            StandIn(token=token) as database,
            _environment(**{TOKEN_ENV: token, SECRET_ENV: secrets.token_urlsafe(16)}),
            override_settings(REVIEW_TDB_URL=database.base_url, REVIEW_TDB_TOKEN_ENV=TOKEN_ENV),
        ):
            while delivery.deliver_notices():
                pass
            while delivery.submit_statements():
                pass
            stored = len(database.stored())
    finally:
        platform.shutdown()
        platform.server_close()
        # No platform answers there once the demo runs: later notices wait (and say why).
        queue.webhook_url = ""
        queue.save(update_fields=["webhook_url"])
    undelivered = StatementDelivery.objects.filter(
        statement__decision__queue=queue, done_at__isnull=True
    )
    if undelivered.exists():
        raise RuntimeError(f"the demo's statements were not all delivered: {list(undelivered)}")
    return stored
