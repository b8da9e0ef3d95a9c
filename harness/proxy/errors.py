"""Errors of the proxy and its HTTP API.

``ApiError`` carries the HTTP status that Toxiproxy's API answers for the same mistake, so
the routes can turn it into ``{"error": ..., "status": N}`` unchanged.
"""
from __future__ import annotations


class ApiError(Exception):
    """A request the API refuses: ``status`` is 400 (bad input), 404, 409 or 500."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.message = message
        self.status = status

    def to_json(self) -> dict:
        return {"error": self.message, "status": self.status}


def bad_request(message: str) -> ApiError:
    return ApiError(message, 400)


def missing_field(field: str) -> ApiError:
    return ApiError(f"missing required field: {field}", 400)


PROXY_NOT_FOUND = "proxy not found"
PROXY_EXISTS = "proxy already exists"
TOXIC_NOT_FOUND = "toxic not found"
TOXIC_EXISTS = "toxic already exists"
INVALID_STREAM = "stream was invalid, can be either upstream or downstream"
INVALID_TOXIC_TYPE = "invalid toxic type"


class ProxyStartError(RuntimeError):
    """The proxy child process did not come up (see its log)."""
