"""Jinja templates from `hive/templates/` (briefs, reports, planning), one
environment per process."""

from __future__ import annotations

import functools
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jinja2


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    import jinja2  # only where something is rendered: keeps `doit list` light

    loader = jinja2.FunctionLoader(lambda name: resources.files("hive.templates").joinpath(name).read_text())
    # compiled templates are cached (in the temp dir, checked against the source) so a
    # run's start-up does not compile them again
    return jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        bytecode_cache=jinja2.FileSystemBytecodeCache(),
    )


def render(template: str, **values: object) -> str:
    return environment().get_template(template).render(**values)
