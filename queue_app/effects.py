"""Effect handlers: what carrying out a decision means, per queue.

A handler is a plain callable taking the Decision (with its item, queue and reason code loaded)
and returning a small JSON-able dict for the log, or None. It runs inside the apply worker's
transaction for that decision (queue_app/apply.py): database writes it makes commit or roll back
with the AppliedDecision row. A queue names its effect from an allow-list: the built-ins (log,
webhook, escalate) and what the deployment registers in settings.REVIEW_EFFECTS (name -> dotted
path; the REVIEW_EFFECTS environment variable, ``unblock=myapp.effects.unblock_account``).
Nothing else is ever imported: a queue row naming ``sys.exit`` gets a dead job with a clear
error, not a worker that exits.

A handler signals failure by raising. PermanentEffectError means retrying cannot help (bad
configuration, a receiver that refuses the request); the job goes dead at once for an operator.
Anything else is treated as transient and retried with backoff.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import logging
import os
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from queue_app.errors import EffectError, PermanentEffectError
from queue_app.jsonutil import exact_dumps
from queue_app.models import Decision, Verdict
from queue_app.services import open_escalation

logger = logging.getLogger("queue_app.apply")

Handler = Callable[[Decision], dict[str, Any] | None]

SIGNATURE_HEADER = "X-Review-Signature"
# Short on purpose: the handler runs inside an open transaction holding the job's row lock.
WEBHOOK_CONNECT_TIMEOUT = 3.0
WEBHOOK_READ_TIMEOUT = 10.0
# Statuses worth another try: the receiver is overloaded, restarting, rate limiting us, or
# still processing an earlier attempt with the same Idempotency-Key (409, as Stripe answers).
TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})


def decision_event(decision: Decision) -> dict[str, Any]:
    """Return the JSON event describing a decision, as sent to receivers."""
    item = decision.item
    return {
        "type": "review.decision",
        "decision_id": decision.pk,
        "item_id": item.pk,
        "item_subject": item.subject,
        "queue": decision.queue.slug,
        "verdict": decision.verdict,
        "standing_verdict": decision.standing_verdict,
        "reason_code": decision.reason_code.code,
        "supersedes": decision.supersedes_id,
        "corrected_verdict": decision.corrected_verdict,
        "item_sequence": item_sequence(decision),
        "decided_at": decision.created_at.isoformat(),
        "trace_id": str(item.trace_id),
    }


def item_sequence(decision: Decision) -> int:
    """Return the decision's ordinal within its item (1 for the verdict, 2 for an overturn...)."""
    # The apply worker reads it with the claim; anyone else pays one indexed count.
    known = getattr(decision, "item_sequence", None)
    if known is None:
        known = Decision.objects.filter(item_id=decision.item_id, pk__lte=decision.pk).count()
        decision.item_sequence = known
    return known


# -- built-ins ----------------------------------------------------------------------------------


def log(decision: Decision) -> dict[str, Any]:
    """Write the decision as one structured log line (the demo default)."""
    event = decision_event(decision)
    logger.info(
        "decision effect: log",
        extra={
            "decision_id": decision.pk,
            "item_id": decision.item_id,
            "queue": decision.queue.slug,
            "trace_id": event["trace_id"],
            "verdict": decision.standing_verdict,
            "supersedes": decision.supersedes_id,
            "item_sequence": event["item_sequence"],
        },
    )
    return {"logged": True}


def escalate(decision: Decision) -> dict[str, Any]:
    """Open the escalated item in the queue's escalation queue (same transaction, once)."""
    target = decision.queue.escalation_queue
    if target is None:
        raise PermanentEffectError(
            f"Queue {decision.queue.slug!r} has no escalation queue; set one, then retry the job."
        )
    # Linked to the decision by a unique foreign key, not by a key a client could claim first:
    # a replay that slipped past AppliedDecision finds this item instead of opening another.
    new_item, _ = open_escalation(decision=decision, target=target)
    return {"escalation_item_id": new_item.pk, "escalation_queue": target.slug}


def webhook(decision: Decision) -> dict[str, Any]:
    """POST the signed decision event to the queue's webhook URL."""
    queue = decision.queue
    if not queue.webhook_url:
        raise PermanentEffectError(f"Queue {queue.slug!r} uses the webhook effect but has no URL.")
    secret = _webhook_secret(queue.slug, queue.webhook_secret_env)
    body = exact_dumps(decision_event(decision), sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        # Stable across retries: an HTTP call cannot be rolled back, so the receiver dedupes.
        "Idempotency-Key": f"decision-{decision.pk}",
        SIGNATURE_HEADER: "sha256=" + sign(body, secret),
        "User-Agent": "review-console-apply-worker",
    }
    status = _post(queue.webhook_url, body, headers)
    if 200 <= status < 300:
        return {"status": status}
    if status >= 500 or status in TRANSIENT_STATUSES:
        raise EffectError(f"Webhook answered HTTP {status}; will retry.")
    # Any other answer (400, 401, 403, 404, 422, a redirect...) is the receiver refusing this
    # request as it stands: a bad signature, a wrong URL, a body it rejects. Sending the same
    # signed bytes again gets the same answer, so retrying only delays the operator; go dead
    # now and let them fix the receiver or the configuration, then retry the job.
    raise PermanentEffectError(f"Webhook refused the event with HTTP {status}.")


def sign(body: bytes, secret: bytes) -> str:
    """Return the hex HMAC-SHA256 of a webhook body under the queue's secret."""
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def _webhook_secret(slug: str, env_name: str) -> bytes:
    if not env_name:
        raise PermanentEffectError(f"Queue {slug!r} names no webhook_secret_env to sign with.")
    secret = os.environ.get(env_name, "")
    if not secret:
        raise PermanentEffectError(
            f"The environment variable {env_name!r} holding queue {slug!r}'s webhook secret "
            "is unset or empty in the apply worker."
        )
    return secret.encode()


def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PermanentEffectError(f"Webhook URL {url!r} is not an http(s) URL.")
    connection_class = (
        http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    )
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    # Separate budgets: a receiver that cannot be reached fails fast; one that accepted the
    # connection gets a little longer to answer.
    conn = connection_class(parts.hostname, parts.port, timeout=WEBHOOK_CONNECT_TIMEOUT)
    try:
        conn.connect()
        assert conn.sock is not None
        conn.sock.settimeout(WEBHOOK_READ_TIMEOUT)
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        response.read(65536)
        return response.status
    except TimeoutError as exc:
        raise EffectError(f"Webhook timed out: {exc or 'no answer in time'}") from exc
    except (OSError, http.client.HTTPException) as exc:
        raise EffectError(f"Webhook unreachable: {type(exc).__name__}: {exc}") from exc
    finally:
        conn.close()


# -- registry -----------------------------------------------------------------------------------

BUILTIN_EFFECTS: dict[str, Handler] = {"log": log, "escalate": escalate, "webhook": webhook}


def registered() -> dict[str, str]:
    """Return the deployment's effects (name -> dotted path), checked against the built-ins."""
    configured = getattr(settings, "REVIEW_EFFECTS", {}) or {}
    for name, path in configured.items():
        if name in BUILTIN_EFFECTS:
            raise ImproperlyConfigured(
                f"REVIEW_EFFECTS registers {name!r}, the name of a built-in effect; pick another."
            )
        if not isinstance(path, str) or "." not in path:
            raise ImproperlyConfigured(
                f"REVIEW_EFFECTS[{name!r}] must be the dotted path to a callable, not {path!r}."
            )
    return dict(configured)


def allowed_names() -> list[str]:
    """Return every effect name a queue may use: the built-ins, then the registered ones."""
    return [*BUILTIN_EFFECTS, *sorted(registered())]


def is_allowed(name: str) -> bool:
    """Whether a queue may name this effect (a registered name, or a registered dotted path)."""
    extra = registered()
    # A registered path is accepted as well as its name, so queue rows written when any
    # dotted path was allowed keep working once the deployment registers that path.
    return name in BUILTIN_EFFECTS or name in extra or name in extra.values()


def effect_name(decision: Decision) -> str:
    """Return the effect a decision calls for: escalate for escalations, else the queue's."""
    if decision.verdict == Verdict.ESCALATE:
        return "escalate"
    return decision.queue.effect or "log"


def resolve(name: str) -> Handler:
    """Return the handler allowed under name; anything not on the allow-list is refused."""
    if name in BUILTIN_EFFECTS:
        return BUILTIN_EFFECTS[name]
    try:
        extra = registered()
    except ImproperlyConfigured as exc:
        raise PermanentEffectError(str(exc)) from exc
    if name in extra:
        path = extra[name]
    elif name in extra.values():
        path = name
    else:
        raise PermanentEffectError(
            f"Effect {name!r} is not allowed: use one of {', '.join(allowed_names())}, or "
            "register it in REVIEW_EFFECTS (name=dotted.path) and restart the worker."
        )
    try:
        handler = import_string(path)
    except ImportError as exc:
        raise PermanentEffectError(f"Effect {name!r} ({path}) cannot be imported: {exc}") from exc
    if not callable(handler):
        raise PermanentEffectError(f"Effect {name!r} ({path}) is not callable.")
    return handler
