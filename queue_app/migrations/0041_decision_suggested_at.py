"""decision_suggested_at: decisions on items with a machine suggestion, by time, built
CONCURRENTLY.

The oversight figures (/metrics, /ops/) read a window of the decisions that had a suggestion;
without this index each window read every decision of the window (the BRIN index on
created_at) to keep the few with one: 3.8x slower /metrics on 2,000,000 decisions (B10,
bench/RESULTS.md). Partial: every decision without a suggestion stays out of it.

Not atomic: the decision table is written by every decide, and a plain CREATE INDEX would
block it while it reads the table (minutes at ten million decisions).
"""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("queue_app", "0040_reviewer_wellness"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="decision",
            index=models.Index(
                condition=models.Q(("suggestion_view__isnull", False)),
                fields=["created_at"],
                name="decision_suggested_at",
            ),
        ),
    ]
