"""Settings for Review Console, read from the environment (django-environ).

DATABASE_URL unset means "start the embedded PostgreSQL under DATA_DIR": a fresh clone runs with
no database server installed. Everything else has a development default that production
overrides through the environment (see README.md, "Configuration").
"""

from __future__ import annotations

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env(
    DEBUG=(bool, False),
    ALLOWED_HOSTS=(list, ["localhost", "127.0.0.1", "[::1]", "testserver"]),
    SECURE_COOKIES=(bool, False),
)
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DATA_DIR = Path(env("REVIEWCONSOLE_DATA_DIR", default=str(BASE_DIR / "var")))
DEBUG = env("DEBUG")
SECRET_KEY = env("SECRET_KEY", default="dev-only-insecure-key-set-SECRET_KEY-in-production")
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
    "queue_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A lost database answers 503 with words (HTML, or the API's JSON shape), never a 500.
    "queue_app.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "reviewconsole.urls"
WSGI_APPLICATION = "reviewconsole.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

if env("DATABASE_URL", default=""):
    DATABASES = {"default": env.db("DATABASE_URL")}
    EMBEDDED_DATABASE = False
else:
    from reviewconsole.embedded_pg import DATABASE_NAME, ensure_embedded_database

    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": DATABASE_NAME,
            **ensure_embedded_database(DATA_DIR),
        }
    }
    EMBEDDED_DATABASE = True

DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
DATABASES["default"].setdefault(
    "TEST", {"NAME": env("TEST_DATABASE_NAME", default="test_reviewconsole")}
)
# Session guards on every connection the app opens: the server ends a transaction left idle
# (a stuck shell or client holding row locks on the queue) and, if set, cancels a runaway
# statement. statement_timeout is off by default because claims and fenced writes carry their
# own (REVIEW_STATEMENT_TIMEOUT_MS), the apply worker its own, and bulk loads may run long.
DB_IDLE_IN_TRANSACTION_TIMEOUT_MS = env.int("DB_IDLE_IN_TRANSACTION_TIMEOUT_MS", default=60_000)
DB_STATEMENT_TIMEOUT_MS = env.int("DB_STATEMENT_TIMEOUT_MS", default=0)
_db_options = DATABASES["default"].setdefault("OPTIONS", {})
_db_options["options"] = " ".join(
    part
    for part in (
        _db_options.get("options", ""),
        f"-c idle_in_transaction_session_timeout={DB_IDLE_IN_TRANSACTION_TIMEOUT_MS}",
        f"-c statement_timeout={DB_STATEMENT_TIMEOUT_MS}",
    )
    if part
)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env("SECURE_COOKIES")
CSRF_COOKIE_SECURE = env("SECURE_COOKIES")

# The claim and the fenced writes run with these so a stuck lock elsewhere in the table
# turns into a clean error instead of a reviewer staring at a spinner.
REVIEW_LOCK_TIMEOUT_MS = env.int("REVIEW_LOCK_TIMEOUT_MS", default=2000)
REVIEW_STATEMENT_TIMEOUT_MS = env.int("REVIEW_STATEMENT_TIMEOUT_MS", default=5000)

# Operations (/ops/, /metrics, doctor): a decision not applied this long after it was made is
# an alarm; /metrics wants "Authorization: Bearer <METRICS_TOKEN>" when the token is set.
UNAPPLIED_ALERT_MINUTES = env.int("UNAPPLIED_ALERT_MINUTES", default=5)
METRICS_TOKEN = env("METRICS_TOKEN", default="")

from reviewconsole.logging_config import build_logging  # noqa: E402

LOGGING = build_logging(debug=DEBUG, json_logs=env.bool("JSON_LOGS", default=not DEBUG))
