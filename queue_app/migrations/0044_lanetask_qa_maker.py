"""lanetask_qa_maker: one reviewer's QA reviews of a window, built CONCURRENTLY.

My work shows a reviewer how often blind QA agreed with them over 30 days. The statement read
every QA review of the window (the whole team's month) and dropped all but theirs at the task,
and at ten million decisions the planner took a parallel plan for it (B10, bench/RESULTS.md).
This partial index holds the QA tasks by maker and the time they were done (the time their
outcome was written), so one reviewer's month is read alone.

Not atomic: lane tasks are written by every check and QA review, and a plain CREATE INDEX would
block them while it reads the table.
"""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("queue_app", "0043_decision_tally"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="lanetask",
            index=models.Index(
                condition=models.Q(("kind", "qa")),
                fields=["maker", "done_at"],
                name="lanetask_qa_maker",
            ),
        ),
    ]
