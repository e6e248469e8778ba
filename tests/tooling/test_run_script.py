"""`make run` (bin/run) ends its start-up with the URL and the demo password, and logs no noise.

bin/run runs for real against a scratch database on the suite's server: migrations, demo data,
collectstatic (into a scratch folder), the apply worker and gunicorn. Then a page and a static
file are fetched, and the script is stopped with SIGTERM as Ctrl-C would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from bench.common import free_port

REPO = Path(__file__).resolve().parents[2]
SCRATCH_DB = "rc_run_script"
READY = "    Ctrl-C stops the web server and the apply worker; then `make stop` stops PostgreSQL."

pytestmark = pytest.mark.slow


@pytest.fixture
def scratch_database_url(db) -> Iterator[str]:
    """A URL for an empty scratch database on the suite's own server, dropped afterwards."""
    params = connection.settings_dict
    admin = {
        "host": params["HOST"] or None,
        "port": params["PORT"] or None,
        "user": params["USER"],
        "password": params["PASSWORD"] or None,
    }
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{SCRATCH_DB}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{SCRATCH_DB}"')
    credentials = params["USER"] + (
        f":{urllib.parse.quote(params['PASSWORD'])}" if params["PASSWORD"] else ""
    )
    if params["HOST"].startswith("/"):  # a socket folder: django-environ reads it from the path
        where = f"/{params['HOST']}"
    else:
        where = params["HOST"] + (f":{params['PORT']}" if params["PORT"] else "")
    yield f"postgres://{credentials}@{where}/{SCRATCH_DB}"
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{SCRATCH_DB}" WITH (FORCE)')


def test_make_run_prints_the_url_and_password_last_and_no_noise(scratch_database_url, tmp_path):
    port = free_port()
    env = {
        k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DEMO_PASSWORD")
    }
    env.update(
        DATABASE_URL=scratch_database_url,
        REVIEWCONSOLE_DATA_DIR=str(tmp_path),
        PORT=str(port),
        WEB_WORKERS="2",
        PY=sys.executable,
    )
    run, lines, ready, reader = _start_run(env)
    try:
        assert ready.wait(timeout=300)
        assert run.poll() is None, "\n".join(lines)
        at_ready = len(lines)
        url = f"http://127.0.0.1:{port}"
        urllib.request.urlopen(f"{url}/static/console/console.css", timeout=30).read()
        urllib.request.urlopen(f"{url}/accounts/login/", timeout=30).read()
    finally:
        run.send_signal(signal.SIGTERM)
        status = run.wait(timeout=120)
        reader.join(timeout=30)
    output = "\n".join(lines)

    banner = lines.index("==> Review Console is running")
    start_up = [i for i, line in enumerate(lines[:at_ready]) if "Booting worker" in line]
    assert start_up and max(start_up) < banner, output
    assert (
        lines[banner + 1]
        == f"    console: http://127.0.0.1:{port}/  (reviewers: alice, bob, carol)"
    )
    password_line = [i for i, line in enumerate(lines) if "created with password: " in line]
    assert len(password_line) == 1 and banner < password_line[0] < at_ready, output
    assert "AXES" not in output
    assert "GET /static/console/console.css" not in output  # no access line per static file
    assert any('"GET /accounts/login/ HTTP/1.1" 200' in line for line in lines), output
    assert status == 0, output


def test_make_run_with_sso_starts_the_test_provider_and_signs_in_through_it(
    scratch_database_url, tmp_path
):
    port, sso_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(
        DATABASE_URL=scratch_database_url,
        REVIEWCONSOLE_DATA_DIR=str(tmp_path),
        PORT=str(port),
        SSO="1",
        SSO_PORT=str(sso_port),
        WEB_WORKERS="1",
        PY=sys.executable,
        NO_PROXY="127.0.0.1,localhost",
    )
    run, lines, ready, reader = _start_run(env)
    try:
        assert ready.wait(timeout=300)
        assert run.poll() is None, "\n".join(lines)
        landed = _sign_in_through_the_provider(f"http://127.0.0.1:{port}", "dana", "dana-sso-demo")
    finally:
        os.killpg(run.pid, signal.SIGTERM)
        run.wait(timeout=120)
        reader.join(timeout=30)
    output = "\n".join(lines)
    assert "dana / dana-sso-demo" in output
    assert landed.rstrip("/") == f"http://127.0.0.1:{port}", output


def _start_run(
    env: dict[str, str],
) -> tuple[subprocess.Popen[str], list[str], threading.Event, threading.Thread]:
    """Start bin/run in a session of its own; its lines are gathered until it is ready."""
    run = subprocess.Popen(
        [str(REPO / "bin" / "run")],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        for line in run.stdout:
            lines.append(line.rstrip("\n"))
            if line.rstrip("\n") == READY:
                ready.set()
        ready.set()  # bin/run ended before it was ready: the caller's assertions say how

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return run, lines, ready, reader


def _sign_in_through_the_provider(app: str, username: str, password: str) -> str:
    """Sign in through the login page's provider button as a browser would; return where we land."""
    import requests

    browser = requests.Session()
    browser.trust_env = False
    assert "Sign in with the local test provider" in browser.get(f"{app}/accounts/login/").text
    for _ in range(240):  # the provider migrates its database before it answers
        login = browser.get(f"{app}/oidc/authenticate/")
        if login.ok and "Test Identity Provider" in login.text:
            break
        threading.Event().wait(0.5)
    done = browser.post(
        login.url,
        data={
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": browser.cookies["provider_csrf"],
            "next": urllib.parse.parse_qs(urllib.parse.urlsplit(login.url).query)["next"][0],
        },
        headers={"Referer": login.url},
    )
    assert done.ok, done.text[:500]
    return done.url
