"""`cohbench corrupt`: synthetic training data from any narrative corpus (see `run`)."""

from .run import CorruptError, Options, corrupt

__all__ = ["CorruptError", "Options", "corrupt"]
