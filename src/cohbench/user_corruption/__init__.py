"""`cohbench corrupt`: a user's narratives read (`inputs`), checked against every corpus's held-out stories
(`leakage`), made into MSD/DSD/... records by a registered recipe of `corruptions` and written like a release
(`job`)."""
