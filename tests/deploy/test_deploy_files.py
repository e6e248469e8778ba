"""deploy/: the systemd units and the nginx site, checked by the tools that read them.

Each file is installed into a scratch folder with its absolute paths pointed at this checkout
(the units' /srv/reviewconsole; its .venv is the one running the tests) or at scratch copies
(certificates, snippets), then read by `systemd-analyze verify` and `nginx -t` exactly as a
host would read it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.conf import settings
from django.test import RequestFactory

from queue_app.api.schemas import MAX_BODY_BYTES
from reviewconsole.proxies import client_address

ROOT = Path(settings.BASE_DIR)
DEPLOY = ROOT / "deploy"
UNITS = sorted((DEPLOY / "systemd").iterdir())


def test_there_is_a_unit_for_the_web_the_worker_and_each_timer():
    assert [u.name for u in UNITS] == [
        "reviewconsole-apply.service",
        "reviewconsole-checkpoint.service",
        "reviewconsole-checkpoint.timer",
        "reviewconsole-clearsessions.service",
        "reviewconsole-clearsessions.timer",
        "reviewconsole-web.service",
    ]


def test_systemd_accepts_every_unit(tmp_path):
    installed = []
    for unit in UNITS:
        target = tmp_path / unit.name
        text = unit.read_text().replace("/srv/reviewconsole/.venv", sys.prefix)
        target.write_text(text.replace("/srv/reviewconsole", str(ROOT)))
        installed.append(str(target))
    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", *installed],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # Unknown keys and bad values are warnings on stderr with exit 0: any output is a defect.
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_systemd_rejects_a_broken_unit(tmp_path):
    # The check above can fail: a misspelt key and a missing program are both reported.
    broken = tmp_path / "broken.service"
    broken.write_text("[Service]\nTyp=simple\nExecStart=/nonexistent/python manage.py\n")
    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(broken)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Unknown key" in result.stderr
    assert result.returncode != 0


def test_the_units_run_commands_that_exist():
    web = (DEPLOY / "systemd/reviewconsole-web.service").read_text()
    assert "reviewconsole.wsgi" in web
    apply = (DEPLOY / "systemd/reviewconsole-apply.service").read_text()
    assert "manage.py run_apply_worker" in apply
    assert "KillSignal=SIGTERM" in apply
    stamp = (DEPLOY / "systemd/reviewconsole-checkpoint.service").read_text()
    assert "manage.py checkpoint --emit" in stamp
    sweep = (DEPLOY / "systemd/reviewconsole-clearsessions.service").read_text()
    assert "manage.py clearsessions" in sweep
    # The options the units pass are the commands' own (a renamed flag fails here).
    for command, flag in [
        ("checkpoint", "--emit"),
        ("run_apply_worker", "--checkpoint-every"),
        ("clearsessions", "--help"),
    ]:
        out = subprocess.run(
            [sys.executable, "manage.py", command, "--help"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        assert flag in out


def _self_signed(folder: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "review.example.com")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=1))
        .not_valid_after(now + timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    (folder / "fullchain.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "privkey.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _nginx_test(tmp_path: Path, site_text: str) -> subprocess.CompletedProcess[str]:
    _self_signed(tmp_path)
    (tmp_path / "static").mkdir()
    (tmp_path / "reviewconsole-proxy.conf").write_text(
        (DEPLOY / "nginx/reviewconsole-proxy.conf").read_text()
    )
    site = (
        site_text.replace("/etc/ssl/reviewconsole", str(tmp_path))
        .replace("/etc/nginx/snippets", str(tmp_path))
        .replace("/var/lib/reviewconsole/staticfiles", str(tmp_path / "static"))
    )
    (tmp_path / "site.conf").write_text(site)
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{\n  access_log off;\n  include {tmp_path}/site.conf;\n}}\n"
    )
    return subprocess.run(
        ["nginx", "-t", "-q", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_nginx_accepts_the_site(tmp_path):
    result = _nginx_test(tmp_path, (DEPLOY / "nginx/reviewconsole.conf").read_text())
    assert (result.returncode, result.stderr) == (0, "")


def test_nginx_rejects_a_broken_site(tmp_path):
    broken = (DEPLOY / "nginx/reviewconsole.conf").read_text().replace("proxy_pass", "proxy_passs")
    result = _nginx_test(tmp_path, broken)
    assert result.returncode != 0
    assert "unknown directive" in result.stderr


def _sizes(text: str) -> list[int]:
    return [int(k) * 1024 for k in re.findall(r"client_max_body_size (\d+)k;", text)]


def test_the_upload_limits_match_the_apps():
    site = (DEPLOY / "nginx/reviewconsole.conf").read_text()
    form_limit, api_limit, attachment_limit = _sizes(site)
    assert form_limit == settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    assert api_limit == MAX_BODY_BYTES
    assert attachment_limit == settings.REVIEW_ATTACHMENT_MAX_BYTES


def test_the_proxy_sets_the_scheme_the_app_trusts():
    proxy = (DEPLOY / "nginx/reviewconsole-proxy.conf").read_text()
    assert "proxy_set_header X-Forwarded-Proto $scheme;" in proxy
    assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in proxy


@pytest.mark.parametrize(
    "count, forwarded, expected",
    [
        (0, "203.0.113.9", "127.0.0.1"),  # no proxy: the header is the client's own words
        (1, "203.0.113.9", "203.0.113.9"),
        (1, "6.6.6.6, 203.0.113.9", "203.0.113.9"),  # a forged left part is ignored
        (2, "6.6.6.6, 203.0.113.9, 10.0.0.2", "203.0.113.9"),
        (1, "", "127.0.0.1"),
    ],
)
def test_login_throttling_counts_the_address_the_trusted_proxy_saw(
    settings, count, forwarded, expected
):
    settings.TRUSTED_PROXY_COUNT = count
    request = RequestFactory().get("/", HTTP_X_FORWARDED_FOR=forwarded, REMOTE_ADDR="127.0.0.1")
    assert client_address(request) == expected
