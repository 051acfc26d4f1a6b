"""`cohbench show`: a static HTML site of a release or of a `corrupt` output (site.py writes it; assets/ holds the
script and style every page shares)."""
