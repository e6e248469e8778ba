"""Reads the pages need, one module per capability; services hold the writes.

Views, the API, the admin and commands read through here (or through the models' own
querysets), never through queue_app.db: the statements and the runner stay behind this layer.
"""
