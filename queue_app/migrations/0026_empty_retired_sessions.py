"""Empty django_session, the table sessions lived in before 0025.

0025 copied the live sessions to queue_app_session and left the originals behind, for the old
processes of a rolling deploy. Nothing reads them once every process runs 0025's code, and
nothing would ever delete them: `clearsessions` clears the session store in use, and the
expired rows stayed too. Each row still names a user and carries the hash that signs them in;
a review tool keeps no such record longer than the session it belongs to.

Backwards this deletes nothing and restores nothing: going back past 0025 copies the live
sessions back from queue_app_session.
"""

from django.db import migrations


def empty_retired_sessions(apps, schema_editor):
    retired = apps.get_model("sessions", "Session")
    retired.objects.using(schema_editor.connection.alias).all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("queue_app", "0025_sessions_with_user"),
        ("sessions", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(empty_retired_sessions, migrations.RunPython.noop, elidable=True),
    ]
