"""What a fuzzed request may change, counted before and after: nothing, or one whole decision."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connection, transaction

_COUNTS = """
SELECT (SELECT count(*) FROM queue_app_decision),
       (SELECT count(*) FROM queue_app_effectjob),
       (SELECT count(*) FROM queue_app_reviewitem),
       (SELECT count(*) FROM queue_app_itemevent),
       (SELECT md5(coalesce(string_agg(concat_ws('|', id, state, lease_owner_id, lease_token,
                                                 lease_expires, subject, payload::text,
                                                 attachments::text),
                                       ',' ORDER BY id), ''))
          FROM queue_app_reviewitem)
"""


@dataclass(frozen=True)
class Ledger:
    decisions: int
    effect_jobs: int
    items: int
    events: int
    items_digest: str

    @classmethod
    def read(cls) -> Ledger:
        with connection.cursor() as cursor:
            cursor.execute(_COUNTS)
            return cls(*cursor.fetchone())


@dataclass
class Change:
    before: Ledger
    after: Ledger | None = None

    @property
    def nothing(self) -> bool:
        return self.after == self.before

    @property
    def one_whole_decision(self) -> bool:
        """One decision, its outbox row and its event, and the item closed: never less."""
        assert self.after is not None
        return (
            self.after.decisions == self.before.decisions + 1
            and self.after.effect_jobs == self.before.effect_jobs + 1
            and self.after.items == self.before.items
        )


@contextmanager
def rolled_back() -> Iterator[Change]:
    """Run a block in a savepoint rolled back afterwards, recording what it changed."""
    with transaction.atomic():
        change = Change(before=Ledger.read())
        try:
            yield change
            change.after = Ledger.read()
        finally:
            transaction.set_rollback(True)
