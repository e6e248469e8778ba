"""Settings for Review Console, read from the environment (django-environ).

DATABASE_URL unset means "start the embedded PostgreSQL under DATA_DIR": a fresh clone runs with
no database server installed. Everything else has a development default that production
overrides through the environment (see README.md, "Configuration").
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import environ
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env(
    DEBUG=(bool, False),
    ALLOWED_HOSTS=(list, ["localhost", "127.0.0.1", "[::1]", "testserver"]),
)
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DATA_DIR = Path(env("REVIEWCONSOLE_DATA_DIR", default=str(BASE_DIR / "var")))
DEBUG = env("DEBUG")
SECRET_KEY = env("SECRET_KEY", default="")
# DATABASE_URL unset: the embedded database of `make run` and the tests, a development setup
# on this machine alone. Its key is made once under DATA_DIR (reviewconsole/dev_key.py), so a
# management command typed in another shell signs as the web server does, DEBUG on or off.
EMBEDDED_DATABASE = not env("DATABASE_URL", default="")
if not SECRET_KEY and EMBEDDED_DATABASE:
    from reviewconsole.dev_key import development_key

    SECRET_KEY = development_key(DATA_DIR)
if not SECRET_KEY:
    if not DEBUG:
        # A key everyone can read in this file signs every session and password-reset link:
        # production must not start on it, and nothing else would stop it (check --deploy
        # accepts any long key).
        raise ImproperlyConfigured(
            "SECRET_KEY is not set and DEBUG is off. Set SECRET_KEY in the environment (or in "
            ".env) to a long random value, e.g. the output of: python -c 'import secrets; "
            "print(secrets.token_urlsafe(50))'. For development, leave DATABASE_URL unset (the "
            "embedded database) or set DEBUG=true."
        )
    # Development only. The django-insecure- prefix makes `check --deploy` flag it (W009).
    SECRET_KEY = "django-insecure-dev-only-key-set-SECRET_KEY-in-production"
ALLOWED_HOSTS = env("ALLOWED_HOSTS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    # Only for its static files: the API docs page (/api/v1/docs) then works offline.
    "ninja",
    # Before queue_app, whose admin takes their device pages away (queue_app/admin/identity.py).
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
    "queue_app",
    "axes",
    # Identity (README.md, "Signing in"): triggers that record access changes (pghistory on
    # pgtrigger), TOTP and recovery codes (django-otp), OpenID Connect (mozilla-django-oidc).
    "pgtrigger",
    "pghistory",
    "mozilla_django_oidc",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    # A NUL in the path or query string is a 400 here, before sessions or any query.
    "queue_app.error_middleware.RefuseNulMiddleware",
    # WhiteNoise, falling back to the app folders until collectstatic has run.
    "reviewconsole.staticfiles.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # Inside SessionMiddleware, so the expiry it extends is saved on the way out.
    "reviewconsole.idle_sessions.IdleSessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    # Django's, given the user the session's read brought along (queue_app/identity/sessions.py).
    "queue_app.identity.sessions.AuthenticationMiddleware",
    # request.user.is_verified(): whether this session proved a second factor (django-otp).
    "django_otp.middleware.OTPMiddleware",
    # A session whose provider no longer admits the user ends (mozilla-django-oidc).
    "queue_app.identity.middleware.OidcSessionRefresh",
    # Staff without a second factor reach neither the admin, nor /ops/, nor an overturn.
    "queue_app.identity.middleware.RequireSecondFactorMiddleware",
    # Who changed access, and in which request (trace id): attached to every history record.
    "queue_app.identity.middleware.AccessHistoryMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A lost database answers 503 with words (HTML, or the API's JSON shape), never a 500.
    "queue_app.error_middleware.DatabaseUnavailableMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "reviewconsole.urls"
WSGI_APPLICATION = "reviewconsole.wsgi.application"

_CONTEXT_PROCESSORS = [
    "django.template.context_processors.request",
    "django.contrib.auth.context_processors.auth",
    "django.contrib.messages.context_processors.messages",
]
# The reviewer's pages are Jinja2 (templates/jinja2/; why: reviewconsole/jinja_env.py), the
# admin and /ops/ Django's templates (templates/admin, templates/ops). No name is in both, so
# each template is found by one engine only.
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "NAME": "jinja2",
        "DIRS": [BASE_DIR / "templates" / "jinja2"],
        "APP_DIRS": False,
        "OPTIONS": {
            "environment": "reviewconsole.jinja_env.environment",
            "context_processors": [*_CONTEXT_PROCESSORS, "reviewconsole.jinja_env.csrf_input_once"],
        },
    },
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": _CONTEXT_PROCESSORS},
    },
]

if not EMBEDDED_DATABASE:
    DATABASES = {"default": env.db("DATABASE_URL")}
else:
    from reviewconsole.embedded_pg import DATABASE_NAME, ensure_embedded_database

    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": DATABASE_NAME,
            **ensure_embedded_database(DATA_DIR),
        }
    }

DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
# The long-running processes (web workers, the apply worker) freeze what they loaded at start-up
# out of the cycle collector's reach and collect young objects every this many allocations
# (reviewconsole/gc_tuning.py); 0 keeps Python's own collector settings.
try:
    GC_GEN0_THRESHOLD = env.int("GC_GEN0_THRESHOLD", default=20_000)
except ValueError:
    GC_GEN0_THRESHOLD = env("GC_GEN0_THRESHOLD")  # reviewconsole/gc_tuning.py says what is wrong
DATABASES["default"].setdefault(
    "TEST", {"NAME": env("TEST_DATABASE_NAME", default="test_reviewconsole")}
)
# Session guards on every connection the app opens: the server ends a transaction left idle
# (a stuck shell or client holding row locks on the queue) and, if set, cancels a runaway
# statement. statement_timeout is off by default because claims and fenced writes carry their
# own (REVIEW_STATEMENT_TIMEOUT_MS), the apply worker its own, and bulk loads may run long.
DB_IDLE_IN_TRANSACTION_TIMEOUT_MS = env.int("DB_IDLE_IN_TRANSACTION_TIMEOUT_MS", default=60_000)
DB_STATEMENT_TIMEOUT_MS = env.int("DB_STATEMENT_TIMEOUT_MS", default=0)
# PostgreSQL's JIT compiles a statement whose estimated cost passes jit_above_cost: hundreds of
# milliseconds of LLVM work that pays back only on long analytic scans. A page's statement is
# short, but over years of history its estimate crosses the bar: the console home took 1.2 s
# instead of 0.4 s at ten million decisions, nearly all of it compiling (B10). Off by default.
DB_JIT = env.bool("DB_JIT", default=False)
_db_options = DATABASES["default"].setdefault("OPTIONS", {})
# DATABASE_URL names PgBouncer in transaction mode (docs/scaling.md): a server connection is
# lent for one transaction, so nothing may rely on a session. The session guards above cannot
# ride on the connection (PgBouncer refuses the `options` start-up parameter): set them (and
# jit = off) on the role instead (ALTER ROLE ... SET). Django's server-side cursors outside a
# transaction are WITH HOLD, a session's, so they are off (Django's own advice for transaction
# pooling). The apply worker LISTENs on DATABASE_DIRECT_URL (PostgreSQL itself) and sets no
# session guards.
REVIEW_TRANSACTION_POOLER = env.bool("REVIEW_TRANSACTION_POOLER", default=False)
if REVIEW_TRANSACTION_POOLER:
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
else:
    _db_options["options"] = " ".join(
        part
        for part in (
            _db_options.get("options", ""),
            f"-c idle_in_transaction_session_timeout={DB_IDLE_IN_TRANSACTION_TIMEOUT_MS}",
            f"-c statement_timeout={DB_STATEMENT_TIMEOUT_MS}",
            "" if DB_JIT else "-c jit=off",
        )
        if part
    )
# PostgreSQL itself, for what needs a session of its own: the apply worker's LISTEN. Unset: the
# worker listens on DATABASE_URL (right unless that is a pooler in transaction mode).
DATABASE_DIRECT_URL = env("DATABASE_DIRECT_URL", default="")
# The claim and decide statements bind their parameters on the server (queue_app.db.runner.
# run_together), and psycopg prepares a statement a connection has run 5 times, so the server
# stops planning it anew. Django's own cursors bind on the client and never prepare, so this
# touches nothing else. Turn it off behind a pooler that cannot carry prepared statements
# across server connections (PgBouncer in transaction mode before 1.21).
REVIEW_PREPARED_STATEMENTS = env.bool("REVIEW_PREPARED_STATEMENTS", default=True)
if REVIEW_PREPARED_STATEMENTS:
    _db_options.setdefault("prepare_threshold", 5)

# A streaming read replica for the heavy readers (/ops/, /metrics, decision exports), which
# tolerate seconds of lag; everything else (claims, decisions, the item page) stays on the
# primary. Unset: one database for all. See reviewconsole/routers.py and docs/scaling.md.
if env("DATABASE_REPLICA_URL", default=""):
    DATABASES["replica"] = {
        **env.db("DATABASE_REPLICA_URL"),
        "CONN_MAX_AGE": DATABASES["default"]["CONN_MAX_AGE"],
        "CONN_HEALTH_CHECKS": True,
        # Tests read the replica from the primary's test database, as if replication were
        # instant.
        "TEST": {"MIRROR": "default"},
    }
    # A replica that cannot be reached fails its check within this (reviewconsole/routers.py).
    DATABASES["replica"].setdefault("OPTIONS", {}).setdefault("connect_timeout", 2)
# Reads inside replica_reads() go back to the primary when the replica is down or its replay
# is further behind than this many seconds (reviewconsole/routers.py, docs/scaling.md).
REVIEW_REPLICA_MAX_LAG_SECONDS = env.float("REVIEW_REPLICA_MAX_LAG_SECONDS", default=30.0)
if REVIEW_REPLICA_MAX_LAG_SECONDS < 0:
    raise ImproperlyConfigured(
        "REVIEW_REPLICA_MAX_LAG_SECONDS must be 0 or more seconds (0: only a replica that has "
        f"replayed everything it received serves reads); got {REVIEW_REPLICA_MAX_LAG_SECONDS}."
    )
# The API's lag-tolerant reads (GET /api/v1/items and /items/{id}) take a tighter bound: an
# upstream system polling an item's state should not see it seconds old (queue_app/api/
# replica_reads.py, docs/api.md).
REVIEW_API_REPLICA_MAX_LAG_SECONDS = env.float("REVIEW_API_REPLICA_MAX_LAG_SECONDS", default=5.0)
if REVIEW_API_REPLICA_MAX_LAG_SECONDS < 0:
    raise ImproperlyConfigured(
        "REVIEW_API_REPLICA_MAX_LAG_SECONDS must be 0 or more seconds (0: only a replica that "
        "has replayed everything it received serves the API's reads); got "
        f"{REVIEW_API_REPLICA_MAX_LAG_SECONDS}."
    )
DATABASE_ROUTERS = ["reviewconsole.routers.ReplicaRouter"]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
# Pages show times in this zone, named ("CET"); the database and exports stay in UTC.
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
# The translation catalogues of what the console writes to people outside it (the statement
# notices, templates/notices/): locale/<language>/LC_MESSAGES/django.po, compiled to django.mo
# beside it (both committed; `msgfmt -o django.mo django.po` after editing, see
# docs/statements-of-reasons.md).
LOCALE_PATHS = [BASE_DIR / "locale"]
USE_TZ = True
# Dates render as "2026-11-30 16:20:08 CET" everywhere (queue_app/datetimes.py): the locale's
# "Nov. 30, 2026, 4:20 p.m." is replaced, in the viewer's TIME_ZONE, with the zone named.
FORMAT_MODULE_PATH = ["reviewconsole.formats"]

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
    # Evidence attachments, content-addressed by sha256 (queue_app/evidence_files.py). Never
    # served from the storage's own URL: only through the console's access-checked view. Any
    # Django storage works, e.g. ATTACHMENT_STORAGE_BACKEND=storages.backends.s3.S3Storage with
    # ATTACHMENT_STORAGE_OPTIONS='{"bucket_name": "review-evidence"}' (django-storages).
    "attachments": {
        "BACKEND": env(
            "ATTACHMENT_STORAGE_BACKEND", default="django.core.files.storage.FileSystemStorage"
        ),
        "OPTIONS": env.json(
            "ATTACHMENT_STORAGE_OPTIONS",
            default={"location": str(DATA_DIR / "attachments")},
        ),
    },
}
# The storage alias attachments are kept in, and the limits on what upstream may attach.
REVIEW_ATTACHMENT_STORAGE = env("REVIEW_ATTACHMENT_STORAGE", default="attachments")
REVIEW_ATTACHMENT_MAX_BYTES = env.int("REVIEW_ATTACHMENT_MAX_BYTES", default=10 * 1024 * 1024)
REVIEW_ATTACHMENTS_MAX_ITEM_BYTES = env.int(
    "REVIEW_ATTACHMENTS_MAX_ITEM_BYTES", default=40 * 1024 * 1024
)
REVIEW_ATTACHMENTS_MAX_COUNT = env.int("REVIEW_ATTACHMENTS_MAX_COUNT", default=20)
# Decoded size bound for images (width x height): a small file that decodes to gigabytes of
# pixels (a decompression bomb) is refused before it is decoded.
REVIEW_ATTACHMENT_MAX_PIXELS = env.int("REVIEW_ATTACHMENT_MAX_PIXELS", default=50_000_000)
# PDFs are shown as pages drawn on the server (queue_app/pdf_pages.py): at most this many pages,
# each at most this many pixels, kept in this folder by digest, page and scale.
REVIEW_PDF_MAX_PAGES = env.int("REVIEW_PDF_MAX_PAGES", default=50)
REVIEW_PDF_MAX_PIXELS = env.int("REVIEW_PDF_MAX_PIXELS", default=6_000_000)
REVIEW_PDF_PAGE_CACHE_DIR = env("REVIEW_PDF_PAGE_CACHE_DIR", default=str(DATA_DIR / "pdf-pages"))
# Each count and page is drawn by a process of its own (queue_app/pdf_worker.py), killed after
# this many seconds and refused more address space than this: a hostile PDF costs it alone.
REVIEW_PDF_RENDER_SECONDS = env.float("REVIEW_PDF_RENDER_SECONDS", default=10.0)
REVIEW_PDF_RENDER_MEMORY_MB = env.int("REVIEW_PDF_RENDER_MEMORY_MB", default=1024)

# The admin counts a filtered list exactly only when the planner expects that count to cost at
# most this (its cost units: about one page read from disk each); above it, the page shows
# the planner's estimate, marked as one (queue_app/admin/pagination.py).
REVIEW_ADMIN_COUNT_COST = env.float("REVIEW_ADMIN_COUNT_COST", default=20000.0)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# -- security (README.md, "Security") -------------------------------------------------------------
# Production is HTTPS-only by default: with DEBUG off, http redirects to https, HSTS is sent and
# cookies are Secure. Each can be turned off from the environment; development (DEBUG=true) and
# the test suite (reviewconsole/settings_test.py) speak plain http.
HTTPS_ONLY = not DEBUG
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=HTTPS_ONLY)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env.bool("SECURE_COOKIES", default=HTTPS_ONLY)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000 if HTTPS_ONLY else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
# The header only makes a domain eligible; listing it is a separate, deliberate submission.
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
# Behind a TLS-terminating proxy Django sees plain http; trust the proxy's X-Forwarded-Proto only
# when told to, since a client reaching the app directly could otherwise claim https.
if env.bool("TRUST_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
# Django's database sessions, kept with the user they sign in, so that one prepared statement
# reads a request's session and its user (queue_app/identity/sessions.py, ReviewSession).
SESSION_ENGINE = "queue_app.identity.sessions"

# Sessions end after SESSION_IDLE_MINUTES without a request: a request pushes the expiry forward
# (at most once a minute, reviewconsole/idle_sessions.py, rather than a session write on every
# request). The item page's lease heartbeat is a request too, so a reviewer reading evidence in
# a visible tab stays signed in (the heartbeat stops while the tab is hidden).
SESSION_COOKIE_AGE = env.int("SESSION_IDLE_MINUTES", default=30) * 60
SESSION_REFRESH_SECONDS = 60

# Login throttling (django-axes): LOGIN_FAILURE_LIMIT wrong passwords for one username from one
# address lock that pair out for LOGIN_COOLOFF_MINUTES, on the console and admin logins alike.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    # Django's ModelBackend, switched off by PASSWORD_LOGIN=false (queue_app/identity/backends.py).
    "queue_app.identity.backends.PasswordBackend",
]
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("LOGIN_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Behind a reverse proxy every request comes from the proxy's address, and throttling by
# (username, address) would lock a username out for everyone at once. TRUSTED_PROXY_COUNT=1
# (one nginx in front, deploy/nginx/) makes the client address the one the proxy appended to
# X-Forwarded-For; 0 (the default, no proxy) trusts only the socket's address.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)
AXES_CLIENT_IP_CALLABLE = "reviewconsole.proxies.client_address"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# What axes counts and stores as the username: what was typed, made to fit its 255-character
# column (no NUL). The login forms (queue_app/login.py) answer such usernames as wrong.
AXES_USERNAME_CALLABLE = "queue_app.login.axes_username"

# Content-Security-Policy (django-csp): nothing inline, nothing from elsewhere, on every page. The
# API docs page needs no exception: it is rendered on the server, with no script.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    }
}
# -- end of security ------------------------------------------------------------------------------

# The claim and the fenced writes run with these so a stuck lock elsewhere in the table
# turns into a clean error instead of a reviewer staring at a spinner.
REVIEW_LOCK_TIMEOUT_MS = env.int("REVIEW_LOCK_TIMEOUT_MS", default=2000)
REVIEW_STATEMENT_TIMEOUT_MS = env.int("REVIEW_STATEMENT_TIMEOUT_MS", default=5000)

# Operations (/ops/, /metrics, doctor): a decision not applied this long after it was made is
# an alarm; /metrics wants "Authorization: Bearer <METRICS_TOKEN>" when the token is set.
UNAPPLIED_ALERT_MINUTES = env.int("UNAPPLIED_ALERT_MINUTES", default=5)
# Effects a queue may name besides the built-ins (log, webhook, escalate): name -> dotted path
# of a callable taking the Decision, e.g. REVIEW_EFFECTS="unblock=myapp.effects.unblock". Only
# these are ever imported (queue_app/effects.py): a queue setting cannot name arbitrary code.
REVIEW_EFFECTS = env.dict("REVIEW_EFFECTS", default={})
# The language of the notices sent to restricted people (templates/notices/, translated through
# LOCALE_PATHS: "de" has a catalogue); empty: the apply worker's active language, English.
REVIEW_NOTICE_LANGUAGE = env("REVIEW_NOTICE_LANGUAGE", default="")
# The Commission's Transparency Database (statements of reasons): its base URL, empty to submit
# nothing, and the NAME of the environment variable holding the platform's token (never the
# token itself, which is read when sending and never logged).
REVIEW_TDB_URL = env("REVIEW_TDB_URL", default="")
REVIEW_TDB_TOKEN_ENV = env("REVIEW_TDB_TOKEN_ENV", default="REVIEW_TDB_TOKEN")
METRICS_TOKEN = env("METRICS_TOKEN", default="")

# Signed checkpoints of the decision chain (queue_app/chain_checkpoints.py): the Ed25519 key that
# signs them (base64 of 32 raw bytes, or PEM; `manage.py checkpoint --generate-key` makes one),
# the public key verifiers trust (defaults to the signer's own), and where the apply worker's
# periodic checkpoints go (a folder, and optionally a webhook).
REVIEW_CHECKPOINT_KEY = env("REVIEW_CHECKPOINT_KEY", default="")
REVIEW_CHECKPOINT_PUBLIC_KEY = env("REVIEW_CHECKPOINT_PUBLIC_KEY", default="")
REVIEW_CHECKPOINT_DIR = Path(env("REVIEW_CHECKPOINT_DIR", default=str(DATA_DIR / "checkpoints")))
REVIEW_CHECKPOINT_WEBHOOK = env("REVIEW_CHECKPOINT_WEBHOOK", default="")


# -- identity (README.md, "Signing in"; queue_app/identity/) ---------------------------------------
import pghistory  # noqa: E402

# Access history (queue_app/models/access_history.py): the context (who, which request) is stored in
# each event row, not in a shared table a later write could change.
PGHISTORY_CONTEXT_FIELD = pghistory.ContextJSONField()
PGHISTORY_CONTEXT_ID_FIELD = pghistory.ContextUUIDField(null=True)
# Record the author of writes only (a GET changes no access).
PGHISTORY_MIDDLEWARE_METHODS = ("POST", "PUT", "PATCH", "DELETE")

# Password login: for development and break-glass admin accounts; PASSWORD_LOGIN=false leaves
# single sign-on as the only way in (the login page then shows only its button).
PASSWORD_LOGIN = env.bool("PASSWORD_LOGIN", default=True)

# Single sign-on with any OpenID Connect provider (mozilla-django-oidc), on when OIDC_ISSUER is
# set: the provider's endpoints and keys are read from its discovery document
# (<issuer>/.well-known/openid-configuration).
OIDC_ISSUER = env("OIDC_ISSUER", default="").rstrip("/")
OIDC_ENABLED = bool(OIDC_ISSUER)
OIDC_PROVIDER_NAME = env("OIDC_PROVIDER_NAME", default="single sign-on")
OIDC_RP_CLIENT_ID = env("OIDC_CLIENT_ID", default="")
OIDC_RP_CLIENT_SECRET = env("OIDC_CLIENT_SECRET", default="")
OIDC_RP_SCOPES = env("OIDC_SCOPES", default="openid email profile")
OIDC_RP_SIGN_ALGO = env("OIDC_SIGN_ALGO", default="RS256")
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
OIDC_TIMEOUT = env.int("OIDC_TIMEOUT_SECONDS", default=10)
# Endpoints come from discovery (queue_app/identity/oidc.py); these stay unset unless a
# provider without discovery needs them spelled out.
OIDC_OP_AUTHORIZATION_ENDPOINT = env("OIDC_AUTHORIZATION_ENDPOINT", default="")
OIDC_OP_TOKEN_ENDPOINT = env("OIDC_TOKEN_ENDPOINT", default="")
OIDC_OP_USER_ENDPOINT = env("OIDC_USERINFO_ENDPOINT", default="")
OIDC_OP_JWKS_ENDPOINT = env("OIDC_JWKS_ENDPOINT", default="")
OIDC_OP_LOGOUT_URL_METHOD = "queue_app.identity.oidc.provider_logout_url"
OIDC_STORE_ID_TOKEN = True
# The claim that lists the user's groups at the provider, and how its values map to Django
# groups ("provider-value=Django group name,..."); re-applied at every sign-in. Only mapped
# groups are managed: a group not in the map is never added or removed by sign-in.
OIDC_GROUPS_CLAIM = env("OIDC_GROUPS_CLAIM", default="groups")
OIDC_GROUP_MAP = env.dict("OIDC_GROUP_MAP", default={})
# A session signed in through the provider asks it again (silently, prompt=none) after this
# long: a user the provider no longer admits loses the session then. The idle timeout by default.
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = env.int("OIDC_RECHECK_SECONDS", default=SESSION_COOKIE_AGE)
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
LOGIN_REDIRECT_URL_FAILURE = "login"
if OIDC_ENABLED:
    AUTHENTICATION_BACKENDS.append("queue_app.identity.oidc.ReviewOidcBackend")

# Second factor (django-otp): staff need a verified TOTP device for the admin, /ops/ and
# overturns; MFA_REQUIRED_FOR_ALL extends it to every signed-in page. With OIDC_TRUST_AMR, a
# sign-in whose ID token says the provider checked a second factor (amr: mfa, otp, hwk, ...)
# counts as verified.
MFA_REQUIRED_FOR_ALL = env.bool("MFA_REQUIRED_FOR_ALL", default=False)
OIDC_TRUST_AMR = env.bool("OIDC_TRUST_AMR", default=False)
OTP_TOTP_ISSUER = env("OTP_TOTP_ISSUER", default="Review Console")
# Wrong codes in a row before verification waits (doubling each time): django-otp's throttle.
OTP_TOTP_THROTTLE_FACTOR = 1
OTP_STATIC_THROTTLE_FACTOR = 1
MFA_RECOVERY_CODES = 10
# -- end of identity -------------------------------------------------------------------------------

from reviewconsole.logging_config import build_logging  # noqa: E402

LOGGING = build_logging(debug=DEBUG, json_logs=env.bool("JSON_LOGS", default=not DEBUG))
