"""B8's baseline: the reviewer cycle's requests served by a bare Django app with raw SQL.

No authentication, sessions, templates, middleware, audit rows, evidence canonicalisation or
access checks: just the database work a review cycle cannot do without (claim, read, fenced
close, insert the decision, claim the next) behind the same URLs, so bench/web_minimal.py can
drive it with B4's load generator through the same gunicorn settings. The gap between the two
is what everything else the product does costs.
"""
