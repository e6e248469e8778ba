"""Production settings pass `manage.py check --deploy` with no warnings; development stays http."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]


def deploy_check(*command: str, **overrides: str | None) -> subprocess.CompletedProcess[str]:
    """Run `check --deploy --fail-level WARNING` (or the command) under the real settings with
    production env; an override of None unsets that variable."""
    env = {
        k: v
        for k, v in os.environ.items()
        # Test-only switches (tests/conftest.py sets DJANGO_ALLOW_ASYNC_UNSAFE) stay behind.
        if not k.startswith(("SECURE_", "SESSION_", "TRUST_X_FORWARDED", "DJANGO_ALLOW_ASYNC"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="reviewconsole.settings",
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(64),
        ALLOWED_HOSTS="review.example.com",
    )
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    command = command or ("check", "--deploy", "--fail-level", "WARNING")
    return subprocess.run(
        [sys.executable, "manage.py", *command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_settings_pass_the_deploy_check_with_no_warnings():
    done = deploy_check()
    assert done.returncode == 0, done.stderr[-3000:]
    assert "no issues" in done.stdout


def test_the_deploy_check_fails_when_https_is_switched_off():
    # The check above can fail: the same run with the redirect and secure cookies off does.
    done = deploy_check(SECURE_SSL_REDIRECT="false", SECURE_COOKIES="false")
    assert done.returncode != 0
    assert "security.W008" in done.stderr
    assert "security.W012" in done.stderr


#: A deployment names its database; nothing connects to it while settings load.
PRODUCTION_DATABASE = "postgres://review@127.0.0.1:9/reviewconsole"
PRINT_KEY = "from django.conf import settings; print(settings.SECRET_KEY)"


@pytest.mark.parametrize("key", [None, ""], ids=["unset", "empty"])
def test_production_refuses_to_start_without_a_secret_key(key):
    done = deploy_check("check", SECRET_KEY=key, DATABASE_URL=PRODUCTION_DATABASE)
    assert done.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is not set and DEBUG is off" in done.stderr


def test_it_runs_management_commands_in_the_make_run_setup_without_a_key():
    # make run: the embedded database, DEBUG on for its processes; a command typed in another
    # shell afterwards has neither DEBUG nor a key, and signs with the web server's key. No
    # DATABASE_URL either, whatever the suite itself runs against: that is make run's setup.
    embedded = {"DATABASE_URL": None, "SECRET_KEY": None}
    shell = deploy_check("shell", "-c", PRINT_KEY, DEBUG=None, **embedded)
    assert shell.returncode == 0, shell.stderr[-2000:]
    web = deploy_check("shell", "-c", PRINT_KEY, DEBUG="true", **embedded)
    key = shell.stdout.strip().splitlines()[-1]
    assert key == web.stdout.strip().splitlines()[-1]
    assert key.startswith("django-insecure-") and len(key) > 50
    done = deploy_check("verify_decisions", "--help", DEBUG=None, **embedded)
    assert done.returncode == 0, done.stderr[-2000:]


def test_development_starts_without_a_key_and_the_deploy_check_flags_its_key():
    # DEBUG=true (bin/run's default) needs no key: the development key is used...
    assert deploy_check("check", DEBUG="true", SECRET_KEY=None).returncode == 0
    # ... and it is one check --deploy recognises as insecure.
    done = deploy_check(DEBUG="true", SECRET_KEY=None)
    assert done.returncode != 0
    assert "security.W009" in done.stderr


@pytest.mark.django_db
def test_behind_a_proxy_it_trusts_x_forwarded_proto_only_when_told(settings, alice):
    settings.SECURE_SSL_REDIRECT = True
    client = Client()
    client.force_login(alice)
    # Not told: a claimed https is plain http, and is redirected.
    assert client.get("/", headers={"X-Forwarded-Proto": "https"}).status_code == 301
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    response = client.get("/", headers={"X-Forwarded-Proto": "https"})
    assert response.status_code == 200
    settings.SECURE_HSTS_SECONDS = 31_536_000
    client = Client()  # SecurityMiddleware reads its settings once, when it is built
    client.force_login(alice)
    response = client.get("/", headers={"X-Forwarded-Proto": "https"})
    assert response["Strict-Transport-Security"].startswith("max-age=31536000")


def test_the_suite_itself_speaks_plain_http():
    # reviewconsole/settings_test.py: the production defaults, minus what needs https.
    assert settings.SECURE_SSL_REDIRECT is False
    assert settings.SESSION_COOKIE_SECURE is False
