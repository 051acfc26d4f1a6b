"""Errors a user can act on. The CLI prints their message as one line and exits non-zero."""


class CohbenchError(Exception):
    """Base class: the message is a complete sentence that says what failed and what to do."""


class SourceError(CohbenchError):
    """An upstream file is missing, corrupt or does not match its pinned checksum."""


class ErratumError(CohbenchError):
    """An erratum does not fit the file it was asked to repair."""


class ParseError(CohbenchError):
    """An upstream file is malformed or truncated."""


class RegistryError(CohbenchError):
    """A corpus or config name is unknown or declared twice."""


class ReleaseError(CohbenchError):
    """The release folder is missing, incomplete or does not match its manifest."""


class QueryError(CohbenchError):
    """A SQL query failed (syntax, unknown view or column, type error)."""


class CorruptionError(CohbenchError):
    """A corruption generator, recipe or `cohbench corrupt` run was given inputs, options or an output folder it
    cannot honour."""
