"""Registered corruption generators (see the corruption-generators issue)."""
