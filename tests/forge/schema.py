"""Every body the forge answers and every body a client sends it, checked against GitHub's
published OpenAPI description (REST API version 2026-03-10) through the pydantic models that
`githubkit-schemas` generates from it, so the fake cannot drift from the real API.

Checked strictly: a missing or mistyped field is an error (pydantic, strict mode), and so is a
key the description does not have (`unknown_keys`), so the fake can neither drop a field nor
invent one, and a client cannot send a misspelt parameter that GitHub would silently ignore."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

try:
    from githubkit_schemas.latest import models
except ImportError as exc:  # githubkit 0.16.1 does not import with hishel 2.0.0 (FORGE-NOTES.md)
    raise ImportError(f"{exc}: the forge's schemas need githubkit, which needs `hishel<2`") from exc

__all__ = ["API_VERSION", "models", "problems"]

API_VERSION = "2026-03-10"  # the version `githubkit_schemas.latest` describes


@cache
def _adapter(shape: Any) -> TypeAdapter[Any]:
    return TypeAdapter(shape)


def problems(shape: Any, body: Any) -> list[str]:
    """What is wrong with `body` as a `shape` (a model, `list[Model]` or a Union of them): []
    when it is valid. Validated from its JSON text, as a client would read it."""
    try:
        parsed = _adapter(shape).validate_json(json.dumps(body), strict=True)
    except ValidationError as exc:
        return [f"{'.'.join(map(str, e['loc'])) or '(body)'}: {e['msg']}" for e in exc.errors()[:20]]
    return unknown_keys(parsed, body)


def unknown_keys(parsed: Any, body: Any, where: str = "") -> list[str]:
    """Keys of `body` that the description does not define for the object they are in. Not
    pydantic's `extra="forbid"`: that also refuses the few objects the description leaves open
    (`additionalProperties`, e.g. an app's permissions)."""
    if isinstance(parsed, BaseModel) and isinstance(body, dict):
        fields = {(f.alias or name): name for name, f in type(parsed).model_fields.items()}
        found = (
            []
            if parsed.model_config.get("extra") == "allow"
            else [
                f"{where}{key}: not in GitHub's description of {type(parsed).__name__}"
                for key in body
                if key not in fields
            ]
        )
        for key, name in fields.items():
            if key in body:
                found += unknown_keys(getattr(parsed, name), body[key], f"{where}{key}.")
        return found
    if isinstance(parsed, list) and isinstance(body, list):
        return [
            p for i, (a, b) in enumerate(zip(parsed, body, strict=False)) for p in unknown_keys(a, b, f"{where}{i}.")
        ]
    return []
