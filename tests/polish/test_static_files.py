"""Static files are served, without a warning, whether or not collectstatic has run."""

from __future__ import annotations

import warnings

import pytest
from django.http import HttpResponse
from django.test import Client, RequestFactory

from reviewconsole.staticfiles import StaticFilesMiddleware

CSS = "/static/console/console.css"


def _not_static(request) -> HttpResponse:
    return HttpResponse("not a static file", status=404)


def _body(response) -> bytes:
    return b"".join(response.streaming_content)


def test_it_serves_from_the_app_folders_before_collectstatic(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "never-collected"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        middleware = StaticFilesMiddleware(_not_static)

    response = middleware(RequestFactory().get(CSS))

    assert response.status_code == 200
    assert b"{" in _body(response)  # the real stylesheet, from static/console/


def test_it_serves_the_collected_folder_once_there_is_one(settings, tmp_path):
    (tmp_path / "console").mkdir()
    (tmp_path / "console" / "console.css").write_text("/* collected */")
    settings.STATIC_ROOT = tmp_path

    response = StaticFilesMiddleware(_not_static)(RequestFactory().get(CSS))

    assert _body(response) == b"/* collected */"


def test_a_missing_extra_root_still_warns(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "never-collected"
    settings.WHITENOISE_ROOT = tmp_path / "typo"

    with pytest.warns(UserWarning, match="No directory at"):
        StaticFilesMiddleware(_not_static)


def test_the_site_serves_its_stylesheet_without_collectstatic(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "never-collected"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        response = Client().get(CSS)

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/css")
