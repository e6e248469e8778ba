"""Second-factor devices are not edited in the admin.

django-otp's own device admins would let an administrator create a device for someone else or
read its secret key (and QR code): enough to pass as them. Enrolment is the user's own
(/accounts/mfa/setup/); an administrator only resets a lost device (/admin/mfa-reset/<id>/,
recorded in the access history).
"""

from __future__ import annotations

from django.contrib import admin
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice

for model in (TOTPDevice, StaticDevice):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
