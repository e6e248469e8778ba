"""English formats: dates as the rest of the product shows them (queue_app/datetimes.py).

Django's "Nov. 30, 2026, 3:20 p.m." in admin lists and read-only fields would be a second
format beside the console's; these make admin columns match it, in the viewer's zone.
"""

DATETIME_FORMAT = "Y-m-d H:i:s T"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s T"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
