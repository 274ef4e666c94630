"""Agents in a sandbox (`[sandbox]`, docs/sandbox.md): bubblewrap gives each attempt's agent
(and its task's checks, setup and teardown) a view of the machine where it can write its own
checkout, a private /tmp, its attempt's own signal folder, its task's notes and questions and
what its CLI must write, and nothing else; `[sandbox] hide` is not there at all; the network
only through a proxy that lets allowed hosts through; no variable that looks like a secret.

- `bwrap`    whether bubblewrap works here, and the command line that runs a program inside it
- `policy`   what a sandbox allows (`Rules`: plain data, shipped to a Ray node), where it stands
             on the machine that runs it (`Box`), and the command line, variables and withheld
             secrets that make it (`Confined`); whether a run sandboxes at all
- `network`  its way out (`[sandbox] network`), and the hosts a model server's URL names
- `proxy`    the proxy on the host and its relay inside the sandbox (standard library only)
- `gitdir`   the attempt's own git directory: a worktree writes into the main repository's
             `.git`, so the sandboxed agent commits into a private one that borrows main's
             objects read-only, and Hive brings its commits back
"""
