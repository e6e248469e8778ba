"""Every raw statement Review Console runs, named, each with what it does and why it is safe.

One module per capability (access, leases, decisions, ...). Managers and services run these;
services decide when. Keeping them here (rather than inline) means the benchmarks can replay
exactly the statements the application runs (bench/ reads these modules), a reviewer of a race
condition has one place to read, and db/statements.sql shows each one's final text
(`make sql` writes it from all_statements()).

Parameters are psycopg named placeholders. Table names are Django's defaults for queue_app.
A module's public UPPER_CASE strings are its statements, each with a line in its PURPOSE;
fragments that statements are composed from are private (a leading underscore).
"""

from __future__ import annotations

from types import ModuleType

from queue_app.db.statements import (
    access,
    appeals,
    automation,
    chain,
    decisions,
    evidence,
    holds,
    identity,
    items,
    lanes,
    leases,
    mywork,
    ops,
    outbox,
    oversight,
    replication,
    timeline,
    transparency,
)

MODULES: tuple[ModuleType, ...] = (
    access,
    leases,
    decisions,
    holds,
    items,
    identity,
    lanes,
    outbox,
    chain,
    ops,
    oversight,
    mywork,
    evidence,
    automation,
    replication,
    appeals,
    transparency,
    timeline,
)


def module_statements(module: ModuleType) -> dict[str, str]:
    """Return a module's statements: its public UPPER_CASE string constants, by name."""
    return {
        name: value
        for name, value in vars(module).items()
        if name.isupper() and not name.startswith("_") and isinstance(value, str)
    }


def all_statements() -> dict[str, str]:
    """Return every statement of every module, by name, in the modules' order."""
    statements: dict[str, str] = {}
    for module in MODULES:
        for name, text in module_statements(module).items():
            if name in statements:
                raise ValueError(f"two statements are named {name}")
            statements[name] = text
    return statements


# -- the hot path, for a schema distributed by queue ---------------------------------------------
# Every statement a reviewer's or worker's cycle runs (claim, renew, release, decide). Each one
# names its queue in every read or write of a table that would be distributed by queue_id, so
# on Citus it is routed to one shard (docs/scaling.md, "1,000x today").
# tests/test_single_shard.py parses each with PostgreSQL's own parser and fails if one loses
# its queue_id predicate; a statement added to the cycle belongs here.
HOT_PATH = (
    "MAY_REVIEW_QUEUE",
    "SET_LOCAL_TIMEOUTS_AND_LOCK_REVIEWER_QUEUE",
    "SET_LOCAL_TIMEOUTS_AND_CHECK_ITEM_ACCESS",
    "RENEW_OWN_LIVE_LEASE",
    "RENEW_OWN_LIVE_LEASE_FOR_PAGE",
    "CLAIM_NEXT_ITEM",
    "CLAIM_NEXT_ITEM_FOR_PAGE",
    "CLAIM_ITEMS",
    "RENEW_LEASE",
    "RELEASE_LEASE",
    "CLOSE_ITEM",
    "INSERT_DECISION",
    "CLOSE_AND_RECORD_DECISION",
)

# The tables distribution by queue_id would shard (docs/scaling.md); the rest (queues, reason
# codes, users, groups, API clients) become reference tables copied to every node.
DISTRIBUTED_TABLES = (
    "queue_app_reviewitem",
    "queue_app_decision",
    "queue_app_effectjob",
    "queue_app_applieddecision",
    "queue_app_itemevent",
    "queue_app_lanetask",
    "queue_app_laneoutcome",
)
