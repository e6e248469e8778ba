"""A changelist paginator whose count stops at a bound: the admin over years of history.

Django's changelist counts every row its filters match (`SELECT COUNT(*)`) to number its
pages. Over ten million decisions that count reads the whole table on every page view, filtered
or not, and it grows with the history. This paginator counts at most COUNT_CAP + 1 rows
(`SELECT COUNT(*) FROM (… LIMIT 10001)`), whatever the table holds: when more match, the page
says "more than 10,000" (templates/admin/pagination.html) and offers the first 200 pages; a
filter or a search narrows the list to the rows wanted. The listed page itself is unchanged.

A bound on the rows counted does not bound the rows read: a filter no index serves (the item
list's "times leased": an index on lease_count would cost every claim its HOT update) reads
every row to find fewer than 10,001 matches. So the planner is asked first (EXPLAIN, no rows
read): when it expects the bounded count to cost more than settings.REVIEW_ADMIN_COUNT_COST, the
page shows its estimate of the rows instead, marked as one ("about 4,800 review items, an
estimate"). What an index serves, or what stops early at the bound, is still counted exactly.
"""

from __future__ import annotations

import json
from typing import Any, cast

from django.conf import settings
from django.contrib import admin
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.utils.functional import cached_property

# Rows counted at most: 200 pages of 50.
COUNT_CAP = 10_000


class CappedCountPaginator(Paginator):
    """Counts up to COUNT_CAP rows; `capped` says whether more matched, `estimated` whether the
    figure is the planner's estimate (counting exactly would have read too much)."""

    capped = False
    estimated = False

    @cached_property
    def count(self) -> int:
        # A slice makes Django count over a LIMITed subquery; no ORDER BY is needed to count.
        rows = cast(QuerySet[Any], self.object_list).order_by()
        if rows.query.is_empty():
            return 0  # .none() (a search with no words): nothing to ask the planner
        bounded = rows[: COUNT_CAP + 1]
        (plan,) = json.loads(bounded.explain(format="json"))
        if plan["Plan"]["Total Cost"] > settings.REVIEW_ADMIN_COUNT_COST:
            self.estimated = True
            counted = round(plan["Plan"]["Plan Rows"])
        else:
            counted = bounded.count()
        self.capped = counted > COUNT_CAP
        return min(counted, COUNT_CAP)


class CappedCountAdmin(admin.ModelAdmin):
    """Base of the changelists of tables that grow with the history."""

    paginator = CappedCountPaginator
    show_full_result_count = False
