"""Single sign-on against a real OpenID Connect provider on loopback (tests/identity/provider.py).

The provider's pages are driven with `requests` as a browser would; Review Console with the test
client. Everything between them (discovery, the code exchange, the ID token signature, nonce,
state and PKCE) is the real thing.
"""

from __future__ import annotations

from io import StringIO
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
import requests
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import Client

from queue_app.identity import oidc
from queue_app.models import SignOnLink
from queue_app.selectors.access_timeline import describe, history_events
from tests.identity.provider import CLIENT_ID, CLIENT_SECRET, Provider, provider  # noqa: F401

pytestmark = pytest.mark.django_db

CALLBACK = "http://testserver/oidc/callback/"


@pytest.fixture
def sso(provider: Provider, settings, queue) -> Provider:  # noqa: F811
    """Review Console configured for the provider; provider group kyc-reviewers → Reviewers."""
    provider.register(CALLBACK)
    settings.OIDC_ISSUER = provider.issuer
    settings.OIDC_ENABLED = True
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_GROUP_MAP = {"kyc-reviewers": "Reviewers", "admins": "Admins"}
    settings.OIDC_PROVIDER_NAME = "Test IdP"
    settings.AUTHENTICATION_BACKENDS = [
        *settings.AUTHENTICATION_BACKENDS,
        "queue_app.identity.oidc.ReviewOidcBackend",
    ]
    oidc.forget_discovery()
    yield provider
    oidc.forget_discovery()


def sign_in(client: Client, username: str, password: str, *, next_url: str = "/") -> str:
    """Go through the provider as a browser would; return where Review Console sends us."""
    start = client.get("/oidc/authenticate/", {"next": next_url})
    assert start.status_code == 302
    authorize = start["Location"]
    browser = requests.Session()
    browser.trust_env = False
    login_page = browser.get(authorize, allow_redirects=True)
    assert "Test Identity Provider" in login_page.text
    done = browser.post(
        login_page.url,
        data={
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": browser.cookies["provider_csrf"],
            "next": parse_qs(urlsplit(login_page.url).query)["next"][0],
        },
        headers={"Referer": login_page.url},
        allow_redirects=False,
    )
    assert done.status_code == 302, done.text[:500]
    back = browser.get(urljoin(login_page.url, done.headers["Location"]), allow_redirects=False)
    callback = back.headers["Location"]
    assert callback.startswith(CALLBACK), callback
    answer = client.get(callback.removeprefix("http://testserver"))
    assert answer.status_code == 302
    return answer["Location"]


def test_the_authorization_request_carries_state_nonce_and_pkce(sso):
    start = Client().get("/oidc/authenticate/")
    query = parse_qs(urlsplit(start["Location"]).query)
    assert start["Location"].startswith(f"{sso.issuer}/authorize/")
    assert query["code_challenge_method"] == ["S256"]
    assert query["state"][0] and query["nonce"][0] and query["code_challenge"][0]
    assert query["scope"] == ["openid email profile"]


def test_a_provider_user_signs_in_with_mapped_groups_and_reaches_their_queue(sso, queue):
    sso.user("dana", "pw-dana", groups=["kyc-reviewers", "unmapped"])
    client = Client()
    assert sign_in(client, "dana", "pw-dana") == "/"
    dana = User.objects.get(username="dana")
    assert dana.email == "dana@example.com"
    assert list(dana.groups.values_list("name", flat=True)) == ["Reviewers"]
    home = client.get("/")
    assert home.status_code == 200 and "Kyc" in home.content.decode()
    rows = [r for r in describe(history_events(user=dana)) if r.kind == "group membership"]
    assert rows and rows[0].by == f"single sign-on (dana (#{dana.pk}))"


def test_groups_are_re_applied_at_every_sign_in(sso):
    sso.user("dana", "pw-dana", groups=["kyc-reviewers"])
    sign_in(Client(), "dana", "pw-dana")
    dana = User.objects.get(username="dana")
    local = Group.objects.create(name="Local only")
    dana.groups.add(local)
    sso.user("dana", "pw-dana", groups=["admins"])
    sign_in(Client(), "dana", "pw-dana")
    assert sorted(dana.groups.values_list("name", flat=True)) == ["Admins", "Local only"]
    removed = [r for r in describe(history_events(user=dana)) if r.action == "removed"]
    assert [r.subject.split(" in group ")[1].split(" (")[0] for r in removed] == ["Reviewers"]


def test_a_user_the_provider_no_longer_admits_loses_the_session_at_the_recheck(sso):
    sso.user("dana", "pw-dana", groups=["kyc-reviewers"])
    client = Client()
    sign_in(client, "dana", "pw-dana")
    assert client.get("/").status_code == 200
    sso.user("dana", "pw-dana", groups=["kyc-reviewers"], active=False)
    # The re-check is due (the idle timeout has passed; moved here rather than waited for).
    session = client.session
    session["oidc_id_token_expiration"] = 0
    session.save()
    recheck = client.get("/")
    assert recheck.status_code == 302
    query = parse_qs(urlsplit(recheck["Location"]).query)
    assert query["prompt"] == ["none"]
    # The provider answers a prompt=none request for a user it does not admit with an error.
    refused = requests.get(recheck["Location"], allow_redirects=False, timeout=10)
    assert refused.status_code == 302, sso.log.read_text()[-3000:]
    callback = refused.headers["Location"]
    assert "error=login_required" in callback
    answer = client.get(callback.removeprefix("http://testserver"))
    assert answer["Location"] == "/accounts/login/"
    assert client.get("/").status_code == 302  # signed out


def test_a_forged_state_is_refused(sso):
    client = Client()
    client.get("/oidc/authenticate/")
    response = client.get("/oidc/callback/", {"code": "x", "state": "forged"})
    assert response.status_code == 400
    assert "_auth_user_id" not in client.session


def test_the_login_page_shows_what_is_enabled(sso, settings):
    page = Client().get("/accounts/login/").content.decode()
    assert "Sign in with Test IdP" in page and 'id="login-form"' in page
    settings.PASSWORD_LOGIN = False
    page = Client().get("/accounts/login/").content.decode()
    assert "Sign in with Test IdP" in page and 'id="login-form"' not in page
    refused = Client().post("/accounts/login/", {"username": "x", "password": "y"})
    assert refused.status_code == 403


def test_the_providers_mfa_is_trusted_only_when_switched_on(sso, settings):
    sso.user("olga", "pw-olga", groups=["admins", "mfa-users"])
    User.objects.create_user("olga", email="olga@example.com", is_staff=True)
    call_command("link_sign_on", sso.subject("olga"), "olga", stdout=StringIO())
    client = Client()
    sign_in(client, "olga", "pw-olga")
    assert client.get("/admin/").status_code == 302  # to the second-factor page
    settings.OIDC_TRUST_AMR = True
    assert client.get("/admin/").status_code == 200


def signed_in_as(client: Client) -> User:
    return User.objects.get(pk=client.session["_auth_user_id"])


def test_it_never_signs_a_provider_account_in_as_the_local_account_with_its_email(sso, settings):
    settings.PASSWORD_LOGIN = False
    boss = User.objects.create_superuser("boss", email="eve@example.com", password="pw-boss")
    sso.user("eve", "pw-eve", groups=[])  # the provider says eve@example.com, unverified
    client = Client()
    sign_in(client, "eve", "pw-eve")
    eve = signed_in_as(client)
    assert eve.pk != boss.pk and not (eve.is_staff or eve.is_superuser)
    assert not boss.sign_on_links.exists()
    link = SignOnLink.objects.get(user=eve)
    assert (link.issuer, link.subject) == (sso.issuer, sso.subject("eve"))


def test_it_never_takes_over_a_local_account_by_its_username(sso):
    local = User.objects.create_user("dana", email="other@example.com", is_staff=True)
    sso.user("dana", "pw-dana", groups=["kyc-reviewers"])
    client = Client()
    sign_in(client, "dana", "pw-dana")
    assert signed_in_as(client).pk != local.pk


def test_it_signs_the_same_provider_account_in_as_the_same_account_by_its_subject(sso):
    sso.user("dana", "pw-dana", groups=["kyc-reviewers"])
    first, second = Client(), Client()
    sign_in(first, "dana", "pw-dana")
    # The provider's e-mail address changes; the subject does not.
    sso.run(
        "from django.contrib.auth.models import User\n"
        "User.objects.filter(username='dana').update(email='dana@elsewhere.example')\n"
    )
    sign_in(second, "dana", "pw-dana")
    assert signed_in_as(first).pk == signed_in_as(second).pk
    assert SignOnLink.objects.count() == 1


def test_an_operator_links_a_provider_account_to_a_local_one_on_purpose(sso):
    olga = User.objects.create_user("olga", email="nothing-alike@example.com")
    sso.user("olga", "pw-olga", groups=[])
    out = StringIO()
    call_command("link_sign_on", sso.subject("olga"), "olga", stdout=out)
    assert "now signs in as 'olga'" in out.getvalue()
    client = Client()
    sign_in(client, "olga", "pw-olga")
    assert signed_in_as(client).pk == olga.pk
    rows = [r for r in describe(history_events(user=olga)) if "sign-on" in r.kind]
    assert rows, describe(history_events(user=olga))
