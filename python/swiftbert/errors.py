"""The engine's errors as Python exceptions: one class per status of swiftbert.h, all
subclasses of SwiftBERTError, each carrying the engine's own message."""
from __future__ import annotations


class SwiftBERTError(Exception):
    """Any failure the engine reports. `status` is the C ABI's code (swiftbert.h)."""

    status = 99


class InvalidArgumentError(SwiftBERTError, ValueError):
    """An argument the engine refused: invalid UTF-8 (a lone surrogate), an unknown precision."""
    status = 1


class ModelNotFoundError(SwiftBERTError, FileNotFoundError):
    """No converted model of that name or folder (swiftbert.pull fetches one)."""
    status = 2


class InvalidModelError(SwiftBERTError):
    """The model folder's weights, config or tokenizer cannot be used."""
    status = 3


class InvalidInputError(SwiftBERTError, ValueError):
    """A request the engine refused: no [MASK] to fill, a prompt name the model lacks, a head
    the checkpoint lacks (a classifier of an embedding model; the message names its heads)."""
    status = 4


class UnsupportedError(SwiftBERTError):
    """The checkpoint's architecture or format is not supported."""
    status = 5


class BufferTooSmallError(SwiftBERTError):
    status = 6


class ClosedHandleError(SwiftBERTError):
    """The model was closed."""
    status = 7


class PullError(SwiftBERTError):
    """swiftbert.pull failed: unknown model, offline, checksum mismatch, download."""
    status = 8


class OutputError(SwiftBERTError, OSError):
    status = 9


_BY_STATUS = {cls.status: cls for cls in (InvalidArgumentError, ModelNotFoundError, InvalidModelError,
                                          InvalidInputError, UnsupportedError, BufferTooSmallError,
                                          ClosedHandleError, PullError, OutputError)}


def for_status(status: int, message: str) -> SwiftBERTError:
    error = _BY_STATUS.get(status, SwiftBERTError)(message)
    error.status = status
    return error
