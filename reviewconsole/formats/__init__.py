"""Format overrides for Django's own rendering of dates (FORMAT_MODULE_PATH)."""
