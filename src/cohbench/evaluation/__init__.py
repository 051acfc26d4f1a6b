"""Evaluation: the protocols, their one reader, the bootstrap, and the reference scorers every result is read against."""
