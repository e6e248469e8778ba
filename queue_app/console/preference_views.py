"""My viewing preferences: how a sensitive queue's images are shown to me (reviewer wellness).

Each choice may be left to the queue: the queue's default (set in the admin) applies until I
choose, and again when I choose "the queue's default".
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from queue_app.console.views import console_view
from queue_app.models import VeilBlur
from queue_app.selectors.wellness import preferences_of
from queue_app.services import preferences_save, queues_for_user

QUEUE_DEFAULT = ""
ON_OFF = [(QUEUE_DEFAULT, "The queue's default"), ("on", "On"), ("off", "Off")]


class PreferencesForm(forms.Form):
    blur = forms.ChoiceField(
        label="Blur of images until revealed",
        choices=[(QUEUE_DEFAULT, "The queue's default"), *VeilBlur.choices],
        required=False,
    )
    greyscale = forms.ChoiceField(label="Images in greyscale", choices=ON_OFF, required=False)
    autoplay = forms.ChoiceField(
        label="Play moving images without being asked", choices=ON_OFF, required=False
    )


def _on_off(value: str) -> bool | None:
    return None if value == QUEUE_DEFAULT else value == "on"


def _as_choice(value: bool | None) -> str:
    return QUEUE_DEFAULT if value is None else ("on" if value else "off")


@console_view
def my_preferences(request: HttpRequest) -> HttpResponse:
    """Show my viewing preferences; a POST saves them whole, or nothing on a bad value."""
    if request.method == "POST":
        form = PreferencesForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            preferences_save(
                user=request.user,
                blur=data["blur"],
                greyscale=_on_off(data["greyscale"]),
                autoplay=_on_off(data["autoplay"]),
            )
            messages.success(request, "Your viewing preferences are saved.")
            return HttpResponseRedirect(reverse("me-preferences"))
        status = 400
    else:
        mine = preferences_of(user_id=request.user.pk)
        form = PreferencesForm(
            initial={
                "blur": mine.blur,
                "greyscale": _as_choice(mine.greyscale),
                "autoplay": _as_choice(mine.autoplay),
            }
        )
        status = 200
    # What each of my sensitive queues shows a reviewer who has not chosen.
    sensitive = list(queues_for_user(user=request.user).filter(sensitive=True).order_by("name"))
    return render(
        request,
        "console/preferences.html",
        {"title": "Viewing preferences", "form": form, "sensitive_queues": sensitive},
        status=status,
    )
