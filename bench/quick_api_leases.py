"""Items leased per second with batches of 1, 20 and 200: through the API and the service layer.

    .venv/bin/python bench/quick_api_leases.py [--items 6000] [--lease 2000] [--rounds 3]

Runs against a scratch database (bench_api_leases) on the app's server: the embedded one
unless DATABASE_URL is set; the app's own database is never touched. "API" is the full Django
stack in-process through the test client (middleware, bearer-token auth, validation, the
exact-JSON renderer), so the gap to "service" is what the HTTP layer costs, without a socket.
Each run leases --lease items from a queue of --items pending ones, in batches of the given
size, one caller at a time; the two paths are interleaved per round so machine noise (a shared
2-core box) hits both alike, and the median round is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DBNAME = "bench_api_leases"


def scratch_database() -> None:
    """Create the scratch database fresh, point Django at it and migrate."""
    import psycopg

    url = os.environ.get("DATABASE_URL", "")
    if url:
        import environ

        cfg = environ.Env.db_url_config(url)
        host, port, user = cfg["HOST"], str(cfg.get("PORT") or ""), cfg["USER"]
    else:
        from reviewconsole.embedded_pg import ensure_embedded_database

        params = ensure_embedded_database(ROOT / "var")
        host, port, user = params["HOST"], "", params["USER"]
    with psycopg.connect(
        host=host, port=port or None, user=user, dbname="postgres", autocommit=True
    ) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DBNAME}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DBNAME}"')
    if host.startswith("/"):
        os.environ["DATABASE_URL"] = f"postgres://{user}@/{DBNAME}?host={quote(host)}"
    else:
        netloc = f"{host}:{port}" if port else host
        os.environ["DATABASE_URL"] = f"postgres://{user}@{netloc}/{DBNAME}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewconsole.settings")
    # Loopback, plain http: without DEBUG the settings would redirect every request to https.
    os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
    # Production settings (DEBUG off) refuse to start without a key: a throwaway one for the bench.
    os.environ.setdefault("SECRET_KEY", "bench-only-key-not-a-secret-0123456789-abcdefghijklmnop")
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ["DEBUG"] = "false"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=6000, help="pending items in the queue")
    parser.add_argument("--lease", type=int, default=2000, help="items leased per run")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    assert args.lease <= args.items
    scratch_database()

    from datetime import timedelta

    from django.db import connection
    from django.test import Client

    from queue_app.api.auth import issue_api_client
    from queue_app.models import Queue, ReasonCode, ReviewItem
    from queue_app.services import claim_batch

    queue = Queue.objects.create(slug="bench", name="Bench")
    ReasonCode.objects.create(queue=queue, verdict="approve", code="ok", label="ok")
    ReviewItem.objects.bulk_create(
        ReviewItem(
            queue=queue,
            subject=f"item {i}",
            payload={"n": i, "variance_amount": "0.00", "match_decision": "MATCHED"},
            idempotency_key=f"bench-{i}",
            source_hash=f"h{i}",
            trace_id=uuid.uuid4(),
        )
        for i in range(args.items)
    )
    client, token = issue_api_client(name="bench", can_adjudicate=True, queues=[queue])
    http = Client(headers={"Authorization": f"Bearer {token}"})

    def reset() -> None:
        ReviewItem.objects.filter(queue=queue).update(
            state="pending", lease_owner=None, lease_token=None, lease_expires=None, lease_count=0
        )
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE queue_app_reviewitem")

    def via_service(batch: int) -> int:
        return len(claim_batch(queue=queue, worker=client.user, n=batch, ttl=timedelta(minutes=2)))

    def via_api(batch: int) -> int:
        response = http.post(
            "/api/v1/queues/bench/leases",
            data=json.dumps({"batch_size": batch, "lease_seconds": 120}),
            content_type="application/json",
        )
        assert response.status_code == 200, response.content
        return len(json.loads(response.content)["items"])

    def run(lease: Callable[[int], int], batch: int) -> float:
        reset()
        calls = max(1, args.lease // batch)
        if batch == 1:
            calls = min(calls, 500)  # one row per call: 500 calls is plenty of samples
        started = time.perf_counter()
        leased = sum(lease(batch) for _ in range(calls))
        elapsed = time.perf_counter() - started
        assert leased == calls * batch, (leased, calls, batch)
        return leased / elapsed

    results: dict[str, dict[str, float]] = {}
    for batch in (1, 20, 200):
        samples: dict[str, list[float]] = {"service": [], "api": []}
        run(via_service, batch)  # warm-up: plans, caches, connection
        run(via_api, batch)
        for _ in range(args.rounds):
            samples["service"].append(run(via_service, batch))
            samples["api"].append(run(via_api, batch))
        results[str(batch)] = {path: round(statistics.median(v), 1) for path, v in samples.items()}
        print(
            f"batch {batch:>3}: service {results[str(batch)]['service']:>9.1f} items/s   "
            f"api {results[str(batch)]['api']:>9.1f} items/s   "
            f"(median of {args.rounds}; samples service={[round(x) for x in samples['service']]} "
            f"api={[round(x) for x in samples['api']]})",
            flush=True,
        )
    print(json.dumps({"items_per_second": results, "pending_items": args.items}))


if __name__ == "__main__":
    main()
