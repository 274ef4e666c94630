"""A scripted GitHub for the tests of pull-request mode, backed by a real bare git repository
and checked against GitHub's OpenAPI description (see server.py)."""

from .server import Call, Forge
from .state import ApiError

__all__ = ["ApiError", "Call", "Forge"]
