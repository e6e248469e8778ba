"""The migration adding item_due_at_in_range moves deadlines stored out of range to its bounds.

Run for real, with the schema editor Django's migrate uses, on rows written as intake wrote them
before the bound: a deadline in year 1 stays breached, one past 9999 stays out of sight, and
every page can show both again.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from queue_app.models import ReviewItem
from tests.conftest import make_items

pytestmark = pytest.mark.django_db(transaction=True)

MIGRATION = ("queue_app", "0030_escalation_files_and_deadline_range")


def _migrate(target) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)


@pytest.fixture
def four_items(queue):
    """Items made with today's schema, before it is migrated back: the model writes columns
    later migrations added, which the older schema lacks."""
    return make_items(queue, 4)


@pytest.fixture
def before_the_range():
    graph = MigrationExecutor(connection).loader.graph
    # The migration before it in this app, whatever it is numbered when branches are merged.
    _migrate([p.key for p in graph.node_map[MIGRATION].parents if p.key[0] == "queue_app"])
    try:
        yield
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_it_moves_deadlines_out_of_range_to_the_nearest_bound(four_items, before_the_range):
    early, late, fine, none = four_items
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE queue_app_reviewitem SET due_at = CASE id"
            " WHEN %s THEN '0001-01-01T00:00:00Z'::timestamptz"
            " WHEN %s THEN '99999-01-01T00:00:00Z'::timestamptz"
            " WHEN %s THEN '2030-01-01T00:00:00Z'::timestamptz END"
            " WHERE id IN (%s, %s, %s)",
            [early.pk, late.pk, fine.pk, early.pk, late.pk, fine.pk],
        )

    _migrate([MIGRATION])

    due = dict(ReviewItem.objects.values_list("pk", "due_at"))
    assert due[early.pk] == datetime(2000, 1, 1, tzinfo=UTC)
    assert due[late.pk] == datetime(2999, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert due[fine.pk] == datetime(2030, 1, 1, tzinfo=UTC)
    assert due[none.pk] is None
