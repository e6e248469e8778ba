"""Run the suite's OpenID Connect provider beside `make run SSO=1`, to try single sign-on locally.

The same provider the sign-on tests start (tests/identity/provider.py), kept between runs: its
database (`reviewconsole_oidc`) on the app's PostgreSQL server (the embedded one unless
DATABASE_URL is set) and its signing key under var/oidc-provider/. Review Console is registered
with the callback of the local web server, and two provider accounts are (re)made: `dana`
(provider group kyc-reviewers, mapped to Reviewers) and `erin` (no group). Never for
production: it signs anyone in whose password it knows.

    python -m tests.oidc_provider.local --port 8001 --app http://127.0.0.1:8000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import environ
import psycopg
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

PROJECT_DIR = Path(__file__).resolve().parents[2]
DATABASE = "reviewconsole_oidc"
CLIENT_ID = "review-console-local"
#: Known to both sides of a demo on one machine; a real provider issues its own.
CLIENT_SECRET = "review-console-local-sso-demo-secret"
#: Provider accounts: username -> (password, provider groups).
ACCOUNTS = {"dana": ("dana-sso-demo", ["kyc-reviewers"]), "erin": ("erin-sso-demo", [])}
#: What bin/run gives Review Console: provider group -> Django group.
GROUP_MAP = "kyc-reviewers=Reviewers"


def _signing_key(folder: Path) -> str:
    path = folder / "key.pem"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        path.write_bytes(pem)
        path.chmod(0o600)
    return path.read_text()


def _database_url(data_dir: Path) -> str:
    """The provider's database on the app's server (DATABASE_URL's, else the embedded one)."""
    url = os.environ.get("DATABASE_URL", "")
    if url:
        config = environ.Env.db_url_config(url)
        server = {
            "host": config.get("HOST") or None,
            "port": config.get("PORT") or None,
            "user": config.get("USER") or None,
            "password": config.get("PASSWORD") or None,
        }
        parts = urlsplit(url)
        path = parts.path.rsplit("/", 1)[0] + f"/{DATABASE}"
        provider_url = urlunsplit(parts._replace(path=path))
    else:
        from reviewconsole.embedded_pg import ensure_embedded_database

        host = ensure_embedded_database(data_dir)["HOST"]
        server = {"host": host, "port": None, "user": "postgres", "password": None}
        provider_url = f"postgres://postgres@/{DATABASE}?host={host}"
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as c:
        if not c.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone():
            c.execute(f'CREATE DATABASE "{DATABASE}"')
    return provider_url


def _setup_script(callback: str, logout: str) -> str:
    return (
        "import django; django.setup()\n"
        "from django.contrib.auth.models import Group, User\n"
        "from oauth2_provider.models import Application\n"
        f"Application.objects.filter(client_id={CLIENT_ID!r}).delete()\n"
        "Application.objects.create(name='Review Console (local)', "
        f"client_id={CLIENT_ID!r}, client_secret={CLIENT_SECRET!r}, "
        "client_type='confidential', authorization_grant_type='authorization-code', "
        f"redirect_uris={callback!r}, post_logout_redirect_uris={logout!r}, "
        "algorithm='RS256', skip_authorization=True)\n"
        f"for name, (password, groups) in {ACCOUNTS!r}.items():\n"
        "    u, _ = User.objects.get_or_create(username=name)\n"
        "    u.email = name + '@sso.example'; u.first_name = name.title()\n"
        "    u.set_password(password); u.save()\n"
        "    u.groups.set([Group.objects.get_or_create(name=g)[0] for g in groups])\n"
    )


def main() -> None:
    """Prepare the provider's database, key and registration, then serve it (until killed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--app", default="http://127.0.0.1:8000", help="Review Console's URL")
    parser.add_argument(
        "--print-env", action="store_true", help="Print Review Console's OIDC_* settings and stop."
    )
    args = parser.parse_args()
    issuer = f"http://127.0.0.1:{args.port}/o"
    if args.print_env:
        print(f"OIDC_ISSUER={issuer}")
        print(f"OIDC_CLIENT_ID={CLIENT_ID}")
        print(f"OIDC_CLIENT_SECRET={CLIENT_SECRET}")
        print(f"OIDC_GROUP_MAP={GROUP_MAP}")
        print("OIDC_PROVIDER_NAME=the local test provider")
        return
    data_dir = Path(os.environ.get("REVIEWCONSOLE_DATA_DIR") or PROJECT_DIR / "var")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.oidc_provider.settings",
        "PROVIDER_DATABASE_URL": _database_url(data_dir),
        "PROVIDER_RSA_KEY": _signing_key(data_dir / "oidc-provider"),
        "PROVIDER_ISSUER": issuer,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    django = [sys.executable, "-m", "django"]
    subprocess.run([*django, "migrate", "-v0"], cwd=PROJECT_DIR, env=env, check=True)
    app = args.app.rstrip("/")
    script = _setup_script(f"{app}/oidc/callback/", f"{app}/accounts/login/")
    subprocess.run([sys.executable, "-c", script], cwd=PROJECT_DIR, env=env, check=True)
    os.chdir(PROJECT_DIR)
    os.execvpe(django[0], [*django, "runserver", f"127.0.0.1:{args.port}", "--noreload"], env)


if __name__ == "__main__":
    main()
