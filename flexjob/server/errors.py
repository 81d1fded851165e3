"""The server's errors: each carries the HTTP status and a message a client can act on.

For: route code raising a meaningful error that ``app`` turns into a JSON response. Not for
platform errors (``flexjob.platform.api``), which ``app`` maps too (not found -> 404).
"""


class ApiError(Exception):
    """An error with an HTTP status; the message names the field or object at fault."""

    status_code = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequestError(ApiError):
    status_code = 400


class NotFoundError(ApiError):
    status_code = 404


class ConflictError(ApiError):
    """The request is well formed but the job's state forbids it (e.g. not preemptible)."""

    status_code = 409
