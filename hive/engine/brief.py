"""Render an agent's context file (its whole brief) from `templates/`."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jinja2

MARKER = "<!-- hive:context "


@dataclass(frozen=True)
class DependencyResult:
    key: str
    title: str
    state: str
    commit: str = ""
    files: tuple[str, ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class Continuation:
    history: tuple[dict, ...] = ()
    commits: tuple[str, ...] = ()
    notes: tuple[dict, ...] = ()
    log_tail: str = ""
    feedback: str = ""


@dataclass(frozen=True)
class ContextInput:
    key: str
    attempt: int
    branch: str
    main_branch: str
    context_file: str
    task: object
    plan: object
    dependencies: tuple[DependencyResult, ...] = ()
    continuation: Continuation | None = None
    project_instructions: str = ""
    decisions: tuple[str, ...] = ()


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    import jinja2  # only where something is rendered: keeps `doit list` light
    loader = jinja2.FunctionLoader(lambda name: resources.files("hive.templates").joinpath(name).read_text())
    # compiled templates are cached (in the temp dir, checked against the source) so a
    # run's start-up does not compile them again
    return jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True, autoescape=False,
                              bytecode_cache=jinja2.FileSystemBytecodeCache())


def render(template: str, **values: object) -> str:
    return environment().get_template(template).render(**values)


def render_context(ci: ContextInput) -> str:
    return render("context.md.j2", **{k: getattr(ci, k) for k in ContextInput.__dataclass_fields__})


def prompt(key: str, title: str, context_path: str) -> str:
    """The short instruction given on the agent's command line ({prompt})."""
    return (f"You are working on task {key} ({title}) in this git worktree. Read {context_path} now: "
            f"it is your complete brief. Do the task, commit with git, then run `hive done` "
            f"(or `hive blocked --reason ...` / `hive too-big --reason ...`).")
