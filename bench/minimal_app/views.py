"""The reviewer cycle's requests with raw SQL and nothing around them."""

from __future__ import annotations

import hashlib
import html

from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

CLAIM = """
UPDATE queue_app_reviewitem AS i
   SET state = 'leased', lease_owner_id = %(owner)s, lease_token = gen_random_uuid(),
       lease_expires = now() + interval '10 minutes', lease_count = i.lease_count + 1
 WHERE i.id = (SELECT id FROM queue_app_reviewitem
                WHERE queue_id = (SELECT id FROM queue_app_queue WHERE slug = %(slug)s)
                  AND state = 'pending'
                -- The console's order (priority, then deadline, then age), which the claim
                -- index item_pending_claim serves: any other order sorts the whole queue.
                ORDER BY priority DESC, due_at, created_at
                LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING i.id
"""

READ = "SELECT subject, payload::text, lease_token FROM queue_app_reviewitem WHERE id = %s"

CLOSE = """
UPDATE queue_app_reviewitem
   SET state = 'decided', decided_at = now(),
       lease_owner_id = NULL, lease_token = NULL, lease_expires = NULL
 WHERE id = %(item)s AND state = 'leased' AND lease_token = %(token)s
RETURNING queue_id
"""

INSERT = """
INSERT INTO queue_app_decision
       (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash, note,
        lease_token, created_at, chain_hash)
SELECT %(item)s, %(queue)s, %(owner)s, 'approve', r.id, %(hash)s, '', %(token)s, now(), ''
  FROM queue_app_reasoncode AS r
 WHERE r.queue_id = %(queue)s AND r.verdict = 'approve' AND r.code = %(reason)s
"""

SLUG = "SELECT slug FROM queue_app_queue WHERE id = %s"


def _owner(request: HttpRequest) -> int:
    return int(request.COOKIES.get("reviewer", "0"))


def healthz(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


def login(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return HttpResponse("<form method=post></form>")
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM auth_user WHERE username = %s", [request.POST["username"]])
        row = cursor.fetchone()
    response = HttpResponseRedirect("/")
    response.set_cookie("reviewer", str(row[0]))
    return response


def _claim(slug: str, owner: int) -> HttpResponse:
    with connection.cursor() as cursor:
        cursor.execute(CLAIM, {"owner": owner, "slug": slug})
        row = cursor.fetchone()
    return HttpResponseRedirect(f"/items/{row[0]}/" if row else "/")


def next_item(request: HttpRequest, slug: str) -> HttpResponse:
    return _claim(slug, _owner(request))


def item(request: HttpRequest, item_id: int) -> HttpResponse:
    with connection.cursor() as cursor:
        cursor.execute(READ, [item_id])
        subject, payload, token = cursor.fetchone()
    digest = hashlib.sha256(payload.encode()).hexdigest()
    return HttpResponse(
        f"<h1>{html.escape(subject)}</h1><pre>{html.escape(payload)}</pre>"
        f'<form method="post"><input name="lease_token" value="{token}">'
        f'<input name="evidence_hash" value="{digest}"></form>'
    )


def decide(request: HttpRequest, item_id: int) -> HttpResponse:
    owner = _owner(request)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(CLOSE, {"item": item_id, "token": request.POST["lease_token"]})
        row = cursor.fetchone()
        if row is None:
            return HttpResponse("stale", status=409)
        queue_id = row[0]
        cursor.execute(
            INSERT,
            {
                "item": item_id,
                "queue": queue_id,
                "owner": owner,
                "hash": request.POST["evidence_hash"],
                "token": request.POST["lease_token"],
                "reason": request.POST["reason_code"],
            },
        )
        cursor.execute(SLUG, [queue_id])
        slug = cursor.fetchone()[0]
    return _claim(slug, owner)
