"""The exceptions parabyte raises. Every one is a `parabyte.Error`; the ones with a natural
built-in counterpart are that too, so `except FileNotFoundError` works as expected."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._native import Failure, Summary


class Error(Exception):
    """Base class of every parabyte error."""


class InvalidInputError(Error, ValueError):
    """A malformed URL, size or option, or a key that cannot be saved as a file."""


class NotFoundError(Error, FileNotFoundError):
    """The object, prefix or bucket does not exist."""


class PermissionDeniedError(Error, PermissionError):
    """The store refused access to the object or bucket."""


class CredentialsError(PermissionDeniedError):
    """No credentials were found, or the store rejected them as a whole."""


class ObjectChangedError(Error):
    """The object changed while it was being downloaded; run again for the new version."""


class NetworkError(Error, ConnectionError):
    """The connection failed, reset or timed out, or the certificate is not trusted."""


class StoreError(Error):
    """The store answered with a failure status, throttled, or broke the protocol."""


class LocalFileError(Error, OSError):
    """A local file could not be created, written or renamed."""


class TransferFailedError(Error):
    """Raised by `Summary.raise_for_failures()` when some objects did not arrive."""

    def __init__(self, message: str, summary: Summary) -> None:
        super().__init__(message)
        self.summary = summary

    @property
    def failures(self) -> list[Failure]:
        """The objects that failed, each with its source and error message."""
        return self.summary.failures
