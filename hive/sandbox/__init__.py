"""Agents in a sandbox (`[sandbox]`, docs/sandbox.md): bubblewrap gives each attempt's agent
(and its task's checks) a view of the machine where it can write its own checkout, a private
/tmp, its attempt's own signal folder, its task's notes and questions and what its CLI must
write, and nothing else; `[sandbox] hide` is not there at all.

- `bwrap`   whether bubblewrap works here, and the command line that runs a program inside it
- `policy`  what one attempt (or check) may read and write (a `bwrap.View`), from the config
            and its profile, and whether a run sandboxes at all
- `gitdir`  the attempt's own git directory: a worktree writes into the main repository's
            `.git`, so the sandboxed agent commits into a private one that borrows main's
            objects read-only, and Hive brings its commits back
"""
