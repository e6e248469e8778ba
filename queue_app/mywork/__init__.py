"""My work: one reviewer's own decisions, handling time, open leases, and a search over them."""
