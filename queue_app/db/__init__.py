"""The database layer: every SQL statement, the runner that sends them, and the schema's rules."""
