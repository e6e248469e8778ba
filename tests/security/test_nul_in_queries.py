"""A NUL in a query string (an admin list filter, its search, a lookup) is a clean 400.

PostgreSQL text cannot hold NUL: a filter or search carrying one used to reach the database and
fail there (DataError, a 500). Every registered changelist is tried, as a superuser.
"""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.db import models
from django.test import Client

pytestmark = pytest.mark.django_db


def _text_field(model: type[models.Model]) -> str:
    """A text column of the model to filter on (the pk where it has none)."""
    for field in model._meta.fields:
        if isinstance(field, models.CharField | models.TextField):
            return field.name
    return "pk"


CHANGELISTS = sorted(
    (model._meta.app_label, model._meta.model_name, _text_field(model))
    for model in admin.site._registry
)


@pytest.fixture
def root_client(root) -> Client:
    client = Client()
    client.force_login(root)
    return client


@pytest.mark.parametrize(("app", "model", "field"), CHANGELISTS)
@pytest.mark.parametrize(
    "query",
    ["q=a%00", "{field}=a%00", "{field}__exact=a%00", "{field}__startswith=%00", "o=1%00"],
)
def test_every_changelist_answers_a_nul_with_400(root_client, app, model, field, query):
    response = root_client.get(f"/admin/{app}/{model}/?" + query.format(field=field))
    assert response.status_code == 400
    assert b"NUL" in response.content


@pytest.mark.parametrize(
    "path",
    [
        "/admin/queue_app/reviewitem/?subject=a%00",
        "/admin/queue_app/reviewitem/?state__exact=a%00",
        "/admin/axes/accesslog/?path_info=%2Fe%00",
        "/admin/axes/accessattempt/?username=%00",
        "/admin/autocomplete/?app_label=queue_app&model_name=decision&field_name=item&term=%00",
        "/admin/queue_app/reviewitem/?a%00=1",
        "/admin/queue_app/reviewitem/%00/change/",
        "/ops/?x=%00",
    ],
)
def test_the_reported_lists_and_lookups_answer_400(root_client, path):
    assert root_client.get(path).status_code == 400


def test_the_api_keeps_its_own_documented_answer():
    # The API validates what it reads (422, in its error shape and its OpenAPI document).
    assert Client().post("/api/v1/queues/%00/leases").status_code in (401, 422)


def test_an_anonymous_visitor_gets_the_400_before_any_session_is_read():
    assert Client().get("/admin/queue_app/reviewitem/?subject=a%00").status_code == 400


def test_a_filter_without_nul_still_works(root_client):
    assert root_client.get("/admin/queue_app/reviewitem/?subject=a").status_code == 200
    assert root_client.get("/admin/axes/accesslog/?q=%2Fe").status_code == 200
