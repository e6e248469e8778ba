"""A real OpenID Connect provider (tests/oidc_provider: django-oauth-toolkit) on loopback.

Started in its own process with its own database (named after the suite's test database) and a
fresh RSA signing key, stopped and dropped at the end. No network beyond 127.0.0.1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.db import connection

from bench.common import free_port
from tests.worker.conftest import database_url

PROJECT_DIR = Path(__file__).resolve().parents[2]
CLIENT_ID = "review-console"
CLIENT_SECRET = "review-console-secret-for-tests"
START_ATTEMPTS = 600  # polls of the discovery document, 0.05 s apart at most


@dataclass
class Provider:
    issuer: str
    env: dict[str, str]
    log: Path

    def run(self, code: str) -> str:
        """Run Python with the provider's Django set up (users, groups, client registrations)."""
        script = "import django; django.setup()\n" + code
        done = subprocess.run(
            [sys.executable, "-c", script],
            cwd=PROJECT_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def register(self, redirect_uri: str) -> None:
        """Register Review Console as a confidential client with this callback."""
        self.run(
            "from oauth2_provider.models import Application\n"
            f"Application.objects.filter(client_id={CLIENT_ID!r}).delete()\n"
            "Application.objects.create(name='Review Console', "
            f"client_id={CLIENT_ID!r}, client_secret={CLIENT_SECRET!r}, "
            "client_type='confidential', authorization_grant_type='authorization-code', "
            f"redirect_uris={redirect_uri!r}, post_logout_redirect_uris={redirect_uri!r}, "
            "algorithm='RS256', skip_authorization=True)\n"
        )

    def subject(self, username: str) -> str:
        """The `sub` claim the provider gives this user (django-oauth-toolkit: its primary key)."""
        return self.run(
            "from django.contrib.auth.models import User\n"
            f"print(User.objects.get(username={username!r}).pk)\n"
        ).strip()

    def user(self, username: str, password: str, *, groups: list[str], active: bool = True) -> None:
        """Create or update a user at the provider, in exactly these groups."""
        self.run(
            "from django.contrib.auth.models import Group, User\n"
            f"u, _ = User.objects.get_or_create(username={username!r})\n"
            f"u.email = {username + '@example.com'!r}; u.first_name = {username.title()!r}\n"
            f"u.set_password({password!r}); u.is_active = {active!r}; u.save()\n"
            f"u.groups.set([Group.objects.get_or_create(name=n)[0] for n in {groups!r}])\n"
        )


@pytest.fixture(scope="module")
def provider(django_db_blocker, tmp_path_factory) -> Iterator[Provider]:
    with django_db_blocker.unblock():
        settings_dict = connection.settings_dict
    name = f"{settings_dict['NAME']}_oidc"
    provider_url = database_url(settings_dict, name=name)
    admin_url = database_url(settings_dict, name="postgres")
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    # OIDC_TEST_PROVIDER_PORT pins the port (to watch the provider by hand); otherwise the
    # kernel picks one, so two test runs on one machine do not collide.
    port = int(os.environ.get("OIDC_TEST_PROVIDER_PORT") or free_port())
    issuer = f"http://127.0.0.1:{port}/o"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.oidc_provider.settings",
        "PROVIDER_DATABASE_URL": provider_url,
        "PROVIDER_RSA_KEY": pem,
        "PROVIDER_ISSUER": issuer,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    subprocess.run(
        [sys.executable, "-m", "django", "migrate", "-v0"], cwd=PROJECT_DIR, env=env, check=True
    )
    # The provider's request log and any traceback, for a failing test to show.
    log = tmp_path_factory.mktemp("oidc-provider") / "provider.log"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "django",
            "runserver",
            f"127.0.0.1:{port}",
            "--noreload",
        ],
        cwd=PROJECT_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )
    try:
        _wait_until_up(issuer, server)
        yield Provider(issuer=issuer, env=env, log=log)
    finally:
        server.terminate()
        server.wait(timeout=30)
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _wait_until_up(issuer: str, server: subprocess.Popen) -> None:
    import time

    for _ in range(START_ATTEMPTS):
        assert server.poll() is None, "the test identity provider exited at start"
        try:
            if requests.get(f"{issuer}/.well-known/openid-configuration", timeout=2).ok:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.05)
    raise AssertionError("the test identity provider did not start")
