"""Statements of reasons as operators count them: built, sent, failing, per queue.

A statement is sent once every delivery it has (the notice; the Transparency Database for a
restriction the contract accepts) is done. It is failing when the contract refused it (it is
never submitted), or a delivery of it is dead (an operator must look); waiting while a
delivery is neither done nor dead (retrying with backoff, or not yet drained).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q

from queue_app.models import StatementDelivery, StatementOfReasons


@dataclass(frozen=True)
class StatementFigures:
    queue: str
    built: int
    sent: int
    refused: int
    dead: int
    waiting: int

    @property
    def failing(self) -> int:
        return self.refused + self.dead


def read_statement_figures() -> list[StatementFigures]:
    """Return the figures of every queue that has statements, by queue slug."""
    open_jobs = StatementDelivery.objects.filter(statement=OuterRef("pk"), done_at__isnull=True)
    rows = (
        StatementOfReasons.objects.annotate(
            has_dead=Exists(open_jobs.filter(dead=True)),
            has_open=Exists(open_jobs),
        )
        .values("decision__queue__slug")
        .annotate(
            built=Count("pk"),
            refused=Count("pk", filter=~Q(errors={})),
            dead=Count("pk", filter=Q(errors={}, has_dead=True)),
            waiting=Count("pk", filter=Q(errors={}, has_dead=False, has_open=True)),
            sent=Count("pk", filter=Q(errors={}, has_open=False)),
        )
        .order_by("decision__queue__slug")
    )
    return [
        StatementFigures(
            queue=row["decision__queue__slug"],
            built=row["built"],
            sent=row["sent"],
            refused=row["refused"],
            dead=row["dead"],
            waiting=row["waiting"],
        )
        for row in rows
    ]
