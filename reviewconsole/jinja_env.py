"""The Jinja2 environment the console's pages render with (templates/jinja2/).

The reviewer's pages (the console, its sign-in pages, 403 and 503) are Jinja2 templates: a
reviewer renders the item page on every cycle, and Django's template language spent more of
each cycle's CPU on it than on anything else the worker did (B8, docs/performance.md). Jinja2
compiles a template to Python once; Django's interprets its node tree on every render. The
admin and /ops/ keep Django's templates: they extend Django admin's.

Everything a page needs that Django's tags gave is here, under the name it had: `url` and
`static`, Django's own filters where Jinja2's differ or are missing (so a page prints what it
printed before), the console's filters (queue_app.templatetags.console), `_` for the admin's
translated strings, and the admin's theme toggle. `csrf_input`, `request`, `user` and
`messages` come from Django's Jinja2 backend and the context processors in settings.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any, NamedTuple

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest
from django.template import defaultfilters
from django.template.backends.utils import csrf_input
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils import dateformat, timezone, translation
from django.utils.functional import SimpleLazyObject
from django.utils.safestring import SafeString
from jinja2 import ChainableUndefined, Environment

from queue_app.services.access import may_see_operations
from queue_app.templatetags import console

# What a page prints for `url` and `static`, remembered per process. Both are the same for the
# same arguments while the URLconf, the script prefix (SCRIPT_NAME) and the static settings
# are: an item page prints eight URLs and ten static paths, and working them out again on
# every render cost about 2% of a reviewer cycle's CPU (B8). The keys
# hold the per-request URLconf and script prefix; a change to the settings they read (tests
# override them) empties both.
_PAGE_ADDRESSES = 4096


@functools.lru_cache(maxsize=_PAGE_ADDRESSES)
def _reversed(name: str, args: tuple[Any, ...], urlconf: str | None, prefix: str) -> str:
    return reverse(name, args=args, urlconf=urlconf)


def url(name: str, *args: Any) -> str:
    """Reverse a URL by name, as `{% url %}` does (NoReverseMatch is an error, not "")."""
    return _reversed(name, args, get_urlconf(), get_script_prefix())


@functools.lru_cache(maxsize=_PAGE_ADDRESSES)
def _static(path: str, prefix: str) -> str:
    return static(path)


def static_url(path: str) -> str:
    """A static file's URL, as `{% static %}` gives it."""
    return _static(path, get_script_prefix())


@receiver(setting_changed)
def _forget_addresses(*, setting: str, **kwargs: Any) -> None:
    if setting in {"ROOT_URLCONF", "FORCE_SCRIPT_NAME", "STATIC_URL", "STORAGES", "DEBUG"}:
        _reversed.cache_clear()
        _static.cache_clear()


def now_as(format_string: str) -> str:
    """The current time in Django's date format, as `{% now %}` prints it."""
    return dateformat.format(timezone.localtime(), format_string)


class Group(NamedTuple):
    grouper: Any
    list: list[Any]


def regroup(values: Any, attribute: str) -> list[Group]:
    """Consecutive runs sharing an attribute, in the list's order, as `{% regroup %}` makes
    them (Jinja2's groupby sorts first, which would reorder the verdicts)."""
    return [
        Group(key, list(run))
        for key, run in itertools.groupby(values, key=lambda v: getattr(v, attribute))
    ]


@functools.cache
def _theme_toggle(language: str | None) -> SafeString:
    return render_to_string("admin/color_theme_toggle.html")


def admin_theme_toggle() -> SafeString:
    """Django admin's light/dark toggle, from admin's own template, once per language."""
    return _theme_toggle(translation.get_language())


def csrf_input_once(request: HttpRequest) -> dict[str, Any]:
    """A context processor: the page's CSRF field, masked once however many forms use it.

    Django's backend gives `csrf_input` as a lazy value that masks the token afresh each time
    it is printed (32 draws from the system's random source), and the item page prints it in
    three or four forms. One masked token per response is what the masking asks (BREACH). It
    is still only made when a form prints it, so a page without a form sets no CSRF cookie.
    """
    return {"csrf_input": SimpleLazyObject(lambda: csrf_input(request))}


def environment(**options: Any) -> Environment:
    # A missing value, or an attribute of one, prints nothing and is false, as under Django's
    # templates: the 503 page has no user, for one. With DEBUG on too (Django's backend would
    # print "{{ name }}" in its place then).
    options["undefined"] = ChainableUndefined
    env = Environment(**options)  # autoescape on: Django's backend sets it unless told not to
    env.globals.update(
        url=url,
        static=static_url,
        now_as=now_as,
        _=translation.gettext,
        get_language=translation.get_language,
        get_language_bidi=translation.get_language_bidi,
        admin_theme_toggle=admin_theme_toggle,
        may_see_operations=may_see_operations,
    )
    env.filters.update(
        # Django's, where Jinja2 has none or prints differently (filesizeformat, title,
        # urlencode), so the pages read as they did under Django's templates.
        capfirst=defaultfilters.capfirst,
        date=defaultfilters.date,
        filesizeformat=defaultfilters.filesizeformat,
        linebreaksbr=defaultfilters.linebreaksbr,
        pluralize=defaultfilters.pluralize,
        timeuntil=defaultfilters.timeuntil_filter,
        title=defaultfilters.title,
        truncatechars=defaultfilters.truncatechars,
        urlencode=defaultfilters.urlencode,
        yesno=defaultfilters.yesno,
        regroup=regroup,
    )
    # The console's own, as its template library registers them for Django's templates (which
    # /ops/ uses): one list of filters for both engines.
    env.filters.update(console.register.filters)
    return env
