"""A scripted local stand-in for the model APIs of the real agent CLIs (see server.py)."""

from .apis import COMMIT_MESSAGE, INPUT_TOKENS, OUTPUT_TOKENS, ROUTER_REPLY
from .script import Conversation, Script, Step, parse
from .server import LoggedRequest, ModelServer

__all__ = [
    "COMMIT_MESSAGE",
    "INPUT_TOKENS",
    "OUTPUT_TOKENS",
    "ROUTER_REPLY",
    "Conversation",
    "LoggedRequest",
    "ModelServer",
    "Script",
    "Step",
    "parse",
]
