"""history_search_indexes: the admin's and My work's searches, filters and lists answered from
indexes, built CONCURRENTLY.

Each read every row of a table that grows with the history (B10, bench/RESULTS.md, at
2,000,000 decisions): a subject search as a substring (7.0x the admin item search, 3.7x My
work's), the decision search by username as a substring (3.0x), the applied effects sorted by
time (2.6x), the item list's age filter (1.8x).

- item_subject_words (GIN): the words of subjects, for the word-prefix searches
  (queue_app/models/subject_search.py builds the same expression for the queries);
- item_created_at: the item list's age filter;
- decision_reviewer_name: the username as decided, matched whole in any case;
- applied_at_recent: the applied effects, latest first.

Not atomic: items and decisions are written by every claim and decide, and a plain CREATE INDEX
would block them while it reads the table (minutes at ten million decisions).
"""

import django.contrib.postgres.indexes
import django.db.models.functions.text
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

import queue_app.models.subject_search


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("queue_app", "0041_decision_suggested_at"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="reviewitem",
            index=django.contrib.postgres.indexes.GinIndex(
                queue_app.models.subject_search.SubjectWords("subject"),
                name="item_subject_words",
            ),
        ),
        AddIndexConcurrently(
            model_name="reviewitem",
            index=models.Index(fields=["created_at"], name="item_created_at"),
        ),
        AddIndexConcurrently(
            model_name="decision",
            index=models.Index(
                django.db.models.functions.text.Upper("reviewer_username"),
                name="decision_reviewer_name",
            ),
        ),
        AddIndexConcurrently(
            model_name="applieddecision",
            index=models.Index(fields=["applied_at", "decision"], name="applied_at_recent"),
        ),
    ]
