"""The effect claim's ordering rule reads indexes, never the decision log or the outbox whole."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from queue_app.db.statements import outbox as outbox_sql
from queue_app.models import ReasonCode
from tests.test_claim_plan import _seq_scanned

pytestmark = pytest.mark.django_db


def _load_history(queue, reviewer) -> None:
    # 20,000 decided items with applied jobs, every 200th still due: enough rows for the
    # planner to prefer the indexes, as it must on a real outbox.
    reason = ReasonCode.objects.get(queue=queue, code="verified")
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO queue_app_reviewitem
                (queue_id, state, priority, created_at, subject, payload, idempotency_key,
                 source_hash, trace_id, lease_count, decided_at)
            SELECT %s, 'decided', 0, now(), 'bulk ' || g, '{}'::jsonb, 'bulk-' || g, '',
                   gen_random_uuid(), 1, now()
              FROM generate_series(1, 20000) AS g
            """,
            [queue.pk],
        )
        cursor.execute(
            """
            INSERT INTO queue_app_decision
                (item_id, queue_id, reviewer_id, verdict, reason_code_id, evidence_hash, note,
                 created_at, chain_hash)
            SELECT id, queue_id, %s, 'approve', %s, repeat('a', 64), '', now(), ''
              FROM queue_app_reviewitem WHERE subject LIKE 'bulk %%' ORDER BY id
            """,
            [reviewer.pk, reason.pk],
        )
        cursor.execute(
            """
            INSERT INTO queue_app_effectjob
                (decision_id, queue_id, created_at, attempts, next_attempt_at, last_error, dead,
                 done_at)
            SELECT id, queue_id, now(), 1, now(), '', false,
                   CASE WHEN id %% 200 = 0 THEN NULL ELSE now() END
              FROM queue_app_decision
            """,
            [],
        )
        cursor.execute("ANALYZE queue_app_reviewitem, queue_app_decision, queue_app_effectjob")


def test_the_effect_claim_checks_earlier_jobs_through_indexes(queue, alice):
    _load_history(queue, alice)

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + outbox_sql.CLAIM_DUE_EFFECT_JOBS, {"limit": 10})
        plan = cursor.fetchone()[0]

    # Due jobs from the partial index; each one's earlier decisions through the item foreign
    # key's index, and their jobs by primary key.
    assert "effectjob_due" in json.dumps(plan)
    assert "queue_app_decision_item_id" in json.dumps(plan)
    assert _seq_scanned(plan) == set()
