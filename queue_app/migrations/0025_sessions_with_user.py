"""Sessions move to queue_app_session, each with the id of the user it signs in.

The column lets one statement read a request's session and its user (sql.SESSION_WITH_USER).
Sessions still live are copied across, their user's id taken from their data, so nobody is
signed out by the deploy; the expired ones stay behind in django_session (clearsessions never
needed to read them again). Backwards, the live sessions are copied back the same way.

While old and new code run side by side (a rolling deploy), a session signed in after the
copy exists only for the new code: an old process sends that browser to the login page.
"""

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.db import migrations, models
from django.utils import timezone

BATCH = 1000


def _user_id(data: dict) -> int | None:
    try:
        return int(data[SESSION_KEY])
    except (KeyError, TypeError, ValueError):
        return None


def copy_live_sessions(apps, schema_editor):
    # The stores of both tables encode alike (same class name, same salt): the data is copied
    # as it is, and decoded only to find the user's id.
    from django.contrib.sessions.backends.db import SessionStore

    old = apps.get_model("sessions", "Session")
    new = apps.get_model("queue_app", "ReviewSession")
    store = SessionStore()
    alias = schema_editor.connection.alias
    live = old.objects.using(alias).filter(expire_date__gt=timezone.now())
    batch = []
    for row in live.iterator(chunk_size=BATCH):
        batch.append(
            new(
                session_key=row.session_key,
                session_data=row.session_data,
                expire_date=row.expire_date,
                user_id=_user_id(store.decode(row.session_data)),
            )
        )
        if len(batch) == BATCH:
            new.objects.using(alias).bulk_create(batch)
            batch = []
    new.objects.using(alias).bulk_create(batch)


def copy_sessions_back(apps, schema_editor):
    old = apps.get_model("sessions", "Session")
    new = apps.get_model("queue_app", "ReviewSession")
    alias = schema_editor.connection.alias
    live = new.objects.using(alias).filter(expire_date__gt=timezone.now())
    old.objects.using(alias).bulk_create(
        (
            old(
                session_key=row.session_key,
                session_data=row.session_data,
                expire_date=row.expire_date,
            )
            for row in live.iterator(chunk_size=BATCH)
        ),
        batch_size=BATCH,
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("queue_app", "0024_item_evidence_hash"),
        ("sessions", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ReviewSession",
            fields=[
                (
                    "session_key",
                    models.CharField(
                        max_length=40, primary_key=True, serialize=False, verbose_name="session key"
                    ),
                ),
                ("session_data", models.TextField(verbose_name="session data")),
                ("expire_date", models.DateTimeField(db_index=True, verbose_name="expire date")),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "session",
                "verbose_name_plural": "sessions",
                "db_table": "queue_app_session",
                "abstract": False,
            },
        ),
        migrations.RunPython(copy_live_sessions, copy_sessions_back, elidable=True),
    ]
