"""manage.py create_api_client: provisions a client without the admin and prints its token once."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from queue_app.api.auth import hash_token
from queue_app.models import ApiClient
from queue_app.selectors.access_timeline import describe, history_events
from tests.conftest import make_queue

pytestmark = pytest.mark.django_db


def create(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("create_api_client", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_prints_only_the_token_and_stores_only_its_hash(queue, root):
    out, err = create("intake-bot", "--scope", "intake", "--queue", "kyc", "--created-by", "root")
    token = out.strip()
    assert "\n" not in token and token.startswith("rc_")
    client = ApiClient.objects.get(name="intake-bot")
    assert client.token_hash == hash_token(token)
    assert token not in str(client.__dict__)
    assert (client.can_intake, client.can_adjudicate) == (True, False)
    assert list(client.queues.values_list("slug", flat=True)) == ["kyc"]
    assert client.created_by == root
    assert "shown only this once" in err and token not in err


def test_the_token_it_prints_works_on_the_api(queue):
    token = create("intake-bot", "--scope", "intake", "--queue", "kyc")[0].strip()
    response = Client().post(
        "/api/v1/items",
        {
            "queue": "kyc",
            "subject": "From a deploy script",
            "payload": {"n": 1},
            "idempotency_key": "deploy-1",
            "source_hash": "h",
        },
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 201, response.content


def test_both_scopes_and_several_queues(queue):
    make_queue("aml")
    both = ["--scope", "intake", "--scope", "adjudicate"]
    create("robot", *both, "--queue", "kyc", "--queue", "aml")
    client = ApiClient.objects.get(name="robot")
    assert (client.can_intake, client.can_adjudicate) == (True, True)
    assert sorted(client.queues.values_list("slug", flat=True)) == ["aml", "kyc"]


def test_the_creation_is_in_the_access_history_under_the_command(queue, root):
    create("intake-bot", "--scope", "intake", "--queue", "kyc", "--created-by", "root")
    found = list(describe(history_events(queue=queue)))
    link = next(r for r in found if r.kind == "API client queue")
    assert link.by == f"manage.py create_api_client (root (#{root.pk}))"
    created = next(r for r in describe(history_events()) if r.kind == "API client")
    assert "can_intake=True" in created.change


@pytest.mark.parametrize(
    "args, words",
    [
        (["bot", "--queue", "nope"], "No queue is named nope"),
        (["bot", "--created-by", "ghost"], "No user is named 'ghost'"),
        (["", "--queue", "kyc"], "The name must be 1 to 200 characters"),
        (["x" * 201], "The name must be 1 to 200 characters"),
        (["a\x00b"], "The name must be 1 to 200 characters"),
    ],
)
def test_bad_input_is_a_clear_error_with_nothing_written(queue, args, words):
    with pytest.raises(CommandError, match=words):
        create(*args)
    assert not ApiClient.objects.exists()


def test_a_taken_name_is_refused(queue):
    create("bot")
    with pytest.raises(CommandError, match="already exists"):
        create("bot")
    assert ApiClient.objects.count() == 1


def test_an_unknown_scope_is_refused_by_the_parser(queue):
    with pytest.raises(CommandError, match="invalid choice"):
        create("bot", "--scope", "admin")
