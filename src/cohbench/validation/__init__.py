"""Release validation suites (see the release-gate issue)."""
