"""Publishing to a forge (`[merge] mode = "pr"`): a verified task's branch pushed to the forge with
the user's own git credentials, by Hive (never its agent), and a pull request opened for it — or the
one it has already: it is looked up by its branch before one is opened, so a run killed between
the push and the PR opens no second one, and a PR a person closed is opened again by `hive retry`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hive.adapters import git
from hive.crashsafe import crash_point
from hive.engine.merge.types import MergeRequest, Move, Outcome, Published
from hive.errors import CommandError
from hive.forges.base import Forge
from hive.forges.http import ForgeError, RateLimited
from hive.output import tail
from hive.store.files import locked


def fetch_base(root: Path, remote: str, base: str, lock: Path) -> None:
    """The forge's base branch fetched, one process of the run at a time (two fetches at once
    fail to lock `refs/remotes/<remote>/<base>`), once more after a moment if someone else's fetch
    (the user's own) held it."""
    with locked(lock):
        try:
            git.fetch(root, remote, base)
        except CommandError:
            time.sleep(0.5)
            git.fetch(root, remote, base)


@dataclass
class ForgePR:
    """The task's PR on `forge`: its branch `head` on `remote`, against `base`."""

    forge: Forge
    remote: str
    base: str
    head: str  # the forge branch, hive/<plan>/<ID>
    title: str
    describe: Callable[[], str]  # the PR's body, as things stand when it is published
    labels: tuple[str, ...] = ()
    pushed: str = ""  # what Hive pushed to `head` last: a force push may replace only that

    moves_main = False

    def refresh(self, req: MergeRequest) -> None:
        fetch_base(req.root, self.remote, self.base, req.lock)

    def publish(self, req: MergeRequest, move: Move) -> Published:
        try:
            self._push(req, move.new)
        except CommandError as e:
            return Published(
                Outcome.REFUSED, f"git push to {self.remote} failed: {' '.join(tail(e.output, 3).split())}"
            )
        crash_point("after-push")
        body = self.describe()
        try:
            pr = self.forge.find_pr(self.head)
            if pr is None or pr.merged:  # none yet, or the branch's last one landed: a task run again
                pr = self.forge.open_pr(self.head, self.base, self.title, body)
                crash_point("after-pr-open")
            elif pr.state == "closed" and not pr.merged:
                pr = self.forge.update_pr(pr.number, body=body, state="open")  # `hive retry` of a closed PR
            else:
                pr = self.forge.update_pr(pr.number, body=body)
            if self.labels:  # each time: a run killed right after opening the PR had not added them
                self.forge.add_labels(pr.number, self.labels)
        except RateLimited as e:
            return Published(Outcome.PAUSED, f"paused: {e}", until=e.until)
        except ForgeError as e:
            return Published(Outcome.REFUSED, f"the forge refused the pull request: {e}")
        return Published(Outcome.PROPOSED, pr=pr.number, url=pr.url, pushed=move.new)

    def _push(self, req: MergeRequest, commit: str) -> None:
        """A plain push; if the forge's branch is not an ancestor of `commit` (a resolve attempt
        rewrote it), a forced one that replaces only what Hive pushed there last."""
        try:
            git.push(req.root, self.remote, commit, self.head)
        except CommandError:
            if not self.pushed:
                raise
            git.push(req.root, self.remote, commit, self.head, lease=self.pushed)
