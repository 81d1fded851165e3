"""Errors of PS input: each names the field that is wrong and what is allowed.

The PS shell turns ``UnknownNameError`` into gRPC NOT_FOUND and ``BadInputError`` into
INVALID_ARGUMENT; neither stops the PS serving other calls.
"""


class PsInputError(ValueError):
    """A request to a PS is wrong; the message names the field."""


class BadInputError(PsInputError):
    """A field has a wrong value, shape or dtype."""


class UnknownNameError(PsInputError):
    """A request names a table or dense parameter this PS does not hold."""
