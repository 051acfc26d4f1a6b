"""`cohbench corrupt`: synthetic training data from any narrative corpus (see `run`)."""

from ..errors import CorruptError
from .run import Options, corrupt

__all__ = ["CorruptError", "Options", "corrupt"]
