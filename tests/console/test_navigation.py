"""Getting around: /ops/ from the console header, Access history from the admin index."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User

from tests.console.conftest import login

pytestmark = pytest.mark.django_db

OPS_LINK = 'href="/ops/">Operations</a>'
HISTORY_LINK = 'id="admin-access-history"'


@pytest.fixture
def operator(reviewers_group) -> User:
    """Staff who also reviews: the console is their home page too."""
    user = User.objects.create_user("olga", password="pw-olga", is_staff=True)
    user.groups.add(reviewers_group)
    return user


def test_staff_find_operations_in_the_console_header_and_may_open_it(operator, queue):
    client = login(operator)
    assert OPS_LINK in client.get("/").content.decode()
    assert client.get("/ops/").status_code == 200


def test_a_reviewer_sees_no_operations_link_and_is_refused_there(alice, queue):
    client = login(alice)
    assert OPS_LINK not in client.get("/").content.decode()
    assert client.get("/ops/").status_code == 403


def test_staff_who_lost_staff_lose_the_link_with_the_page(operator, queue):
    client = login(operator)
    User.objects.filter(pk=operator.pk).update(is_staff=False)
    assert OPS_LINK not in client.get("/").content.decode()
    assert client.get("/ops/").status_code == 403


def test_the_admin_index_links_access_history_for_those_who_may_read_it(operator):
    client = login(operator)
    assert HISTORY_LINK not in client.get("/admin/").content.decode()
    assert client.get("/admin/access-history/").status_code == 403
    operator.user_permissions.add(Permission.objects.get(codename="view_user"))
    page = client.get("/admin/").content.decode()
    assert f'<a href="/admin/access-history/" {HISTORY_LINK}>Access history</a>' in page
    assert client.get("/admin/access-history/").status_code == 200
