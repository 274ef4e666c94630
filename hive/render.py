"""Jinja templates from `hive/templates/` (briefs, reports, planning), one
environment per process."""

from __future__ import annotations

import functools
import re
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


def fence(text: str, least: int = 3) -> str:
    """A code fence (at least `least` backticks) longer than any run of backticks in `text`: what
    it holds cannot close it, nor make a heading or a field of the markdown around it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(least, longest + 1)


def quoted(text: str) -> str:
    """`text` as a markdown quote, each line under `> ` (a quote of nothing says so)."""
    return "\n".join(f"> {line}" if line else ">" for line in (text.strip() or "(no text)").splitlines())
