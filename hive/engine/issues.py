"""A task's issue on the forge — the task of a plan drafted from issues (`hive plan --from-issues`,
its ID the issue's number) — and the people there:

- its status, written back in pull-request mode as ONE comment, edited in place as things change
  (started, PR opened, CI round N, waiting for review, merged in #PR, failed or blocked and what
  a person can do); `[forge] comment = false` turns it off;
- its agent's questions (`hive ask`), in pull-request mode, posted on its issue (or its PR when it
  has no issue) with the options and how to answer: `/answer <option>` or `/answer <text>`;
- a checkpoint's answer: `/approve` or `/reject <why>` on its issue.

A command counts only from a collaborator with write access, and only once (its id is recorded
with the task); everyone else's are ignored, and shown to the human in `hive status` with who and
why. Answers from the forge and from the terminal race safely: the first one recorded wins (the
answer file is created exclusively), and the second is told so. Nothing here fails a task: a
forge that does not answer is said once and tried again later."""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from hive.crashsafe import crash_point
from hive.engine.task import TaskContext
from hive.errors import HiveError
from hive.forges import base
from hive.forges.http import ForgeError
from hive.output import say
from hive.render import quoted
from hive.store import questions
from hive.store.questions import Question
from hive.store.state import TaskState

_COMMAND = re.compile(r"\A\s*/(answer|approve|reject)\b[ \t]*(.*?)\s*\Z", re.DOTALL)
MOST_IGNORED = 20


@dataclass(frozen=True)
class Command:
    id: int
    user: str
    verb: str  # "answer" | "approve" | "reject"
    text: str


def issue_of(h: TaskContext) -> int:
    """The task's issue: its ID in a plan drafted from issues, else 0."""
    return int(h.task.id) if h.job.plan.issues and h.task.id.isdigit() else 0


# --- its status, one comment ------------------------------------------------------------------------


def tell(h: TaskContext, st: TaskState, what: str) -> TaskState:
    """Its issue's status comment says `what` now: made once (found again by its mark after a
    crash between making it and recording it), then edited."""
    number = issue_of(h)
    if not (number and h.cfg.pr_mode and h.cfg.forge_comment) or st.issue_said == what:
        return st
    mark = f"<!-- hive:status {h.key} -->"
    body = f"{mark}\n<sub>Hive keeps this comment up to date as task `{h.key}` moves on.</sub>\n\n{inert(what)}"
    try:
        forge = h.forge()
        comment = st.issue_comment
        if not comment:  # made before a crash kept it from being recorded?
            found = _mine(forge, number, mark)
            comment = found.id if found else 0
        if comment:
            forge.edit_comment(comment, body)
        else:
            comment = forge.comment(number, body).id
    except (ForgeError, HiveError) as e:
        say(f"{h.key}: warning: could not update its status on issue #{number}: {e}")
        return st
    return h.update(None, issue_comment=comment, issue_said=what)


def _mine(forge: base.Forge, number: int, mark: str) -> base.Comment | None:
    """Hive's own comment on `number` that starts with `mark`, if there is one."""
    me = forge.whoami()
    return next((c for c in forge.comments(number) if c.user == me and c.body.startswith(mark)), None)


def status_line(h: TaskContext, st: TaskState) -> str:
    """What its status comment says of a task that stopped (failed, blocked, too big)."""
    return f"**{st.state}**: {st.reason} — `hive retry {h.key}` once it is dealt with"


# --- commands in comments ------------------------------------------------------------------------


def _commands(
    h: TaskContext, forge: base.Forge, number: int, since: float, st: TaskState, verbs: tuple[str, ...]
) -> tuple[list[Command], TaskState]:
    """The new commands (`verbs`) on issue or PR `number` since `since`, in order, from
    collaborators with write access; the others' recorded as read and ignored at once. A command
    is recorded as read only once it was acted on (`done`): a run killed in between acts on it
    again, and acting twice records nothing twice (the answer file is made exclusively)."""
    me = forge.whoami()
    found, read, ignored = [], list(st.forge_read), list(st.forge_ignored)
    for c in forge.comments(number, since):
        if c.id in st.forge_read or c.user == me or _epoch(c.created_at) < since:
            continue
        m = _COMMAND.match(c.body)
        if not m or m.group(1) not in verbs:
            continue
        if forge.permission(c.user) not in base.WRITE:
            read.append(c.id)
            ignored.append(f"/{m.group(1)} by @{c.user} (no write access) on #{number}: ignored")
            continue
        found.append(Command(c.id, c.user, m.group(1), m.group(2)))
    if read != list(st.forge_read):
        st = h.update(None, forge_read=tuple(read), forge_ignored=tuple(ignored[-MOST_IGNORED:]))
    return found, st


def done(h: TaskContext, command: Command) -> None:
    """`command` acted on: never read again."""
    st = h.read()
    if command.id not in st.forge_read:
        h.update(None, forge_read=(*st.forge_read, command.id))


def _epoch(stamp: str) -> float:
    try:
        return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return 0.0


def _reply(h: TaskContext, number: int, text: str) -> None:
    _post(h, number, f"**Hive** · `{h.key}` · {text}", "its reply")


def _post(h: TaskContext, number: int, body: str, what: str) -> None:
    """A comment on issue or PR `number`; a forge that refuses it is said, not raised: the task
    goes on without it."""
    try:
        h.forge().comment(number, body)
    except (ForgeError, HiveError) as e:
        say(f"{h.key}: warning: could not post {what} on #{number}: {e}")


# --- questions -------------------------------------------------------------------------------------


def where_asked(h: TaskContext, st: TaskState) -> int:
    """Where its questions go on the forge (pull-request mode): its issue, else its PR, else nowhere."""
    return (issue_of(h) or st.pr) if h.cfg.pr_mode else 0


def ask(h: TaskContext, st: TaskState, q: Question) -> None:
    """Its agent's question, posted where the team reads it, with how to answer it."""
    number = where_asked(h, st)
    if not number:
        return
    options = f"\n\nIts options: {', '.join(f'`{o}`' for o in q.options)}." if q.options else ""
    details = f"\n\n{_quoted(q.details)}" if q.details else ""
    body = (
        f"<!-- hive:question {h.key} {q.number} -->\n**Hive** · `{h.key}` · its agent asks (question "
        f"{q.number}):\n\n{_quoted(q.text)}{details}{options}\n\nA collaborator with write access answers with a "
        f"comment: `/answer <option>` or `/answer <your words>`. Or, where Hive runs: "
        f"`{questions.answer_command(h.key, q)}`."
    )
    _post(h, number, body, "its question")


def answers(h: TaskContext, q: Question) -> None:
    """The first `/answer` from a collaborator with write access since the question was asked
    answers it, exactly as `hive answer` does; Hive replies with what it took (or, when the
    terminal was first, that it was answered already)."""
    st = h.read()
    number = where_asked(h, st)
    if not number:
        return
    try:
        forge = h.forge()
        found, st = _commands(h, forge, number, q.asked_at - 1, st, ("answer",))
    except (ForgeError, HiveError) as e:
        say(f"{h.key}: warning: could not read the answers on #{number}: {e}")
        return
    for command in found:
        if not command.text:
            _reply(h, number, f"@{command.user}: `/answer` needs the answer after it")
            done(h, command)
            continue
        choice = _choice(q, command.text)
        said = choice or command.text
        try:
            questions.answer(h.paths, h.plan_name, h.task.id, "" if choice else command.text, choice)
        except HiveError as e:
            if not _took_it_before(h, q, said):  # else: taken before a crash kept it from being recorded
                _reply(h, number, f"@{command.user}: not taken — {e}")
            done(h, command)
            return
        crash_point("after-forge-answer")
        _reply(h, number, f"took @{command.user}'s answer to question {q.number}: {said}")
        done(h, command)
        say(f"{h.key}: question {q.number} answered on the forge by @{command.user}")
        return


def answered(h: TaskContext, q: Question) -> None:
    """The question is answered (here or there): its comment on the forge says so and with what,
    so nobody answers it again, and a collaborator's `/answer` that came too late is told it was
    not taken."""
    st = h.read()
    number = where_asked(h, st)
    if not number or not q.answered:
        return
    try:
        forge = h.forge()
        mark = f"<!-- hive:question {h.key} {q.number} -->"
        comment = _mine(forge, number, mark)
        if comment is not None and "**Answered:**" not in comment.body:
            forge.edit_comment(comment.id, f"{comment.body}\n\n**Answered:** {inert(q.shown_answer())}")
        late, _ = _commands(h, forge, number, q.asked_at - 1, st, ("answer",))
    except (ForgeError, HiveError) as e:
        say(f"{h.key}: warning: could not mark question {q.number} answered on #{number}: {e}")
        return
    for command in late:
        if not _took_it_before(h, q, _choice(q, command.text) or command.text):
            _reply(h, number, f"@{command.user}: not taken — question {q.number} was answered already")
        done(h, command)


def _choice(q: Question, text: str) -> str:
    """The question's option `text` names (in any case), or ""."""
    return next((o for o in q.options if o.casefold() == text.casefold()), "")


def _took_it_before(h: TaskContext, q: Question, said: str) -> bool:
    now = next((a for a in questions.load(h.paths, h.plan_name, h.task.id) if a.number == q.number), None)
    return now is not None and now.answered and (now.choice or now.answer) == said


def poller(h: TaskContext) -> Callable[[Question], None]:
    """`answers`, at most once per `[forge] poll`: what the supervisor calls while a question waits."""
    last = [0.0]

    def poll(q: Question) -> None:
        now = time.monotonic()
        if now - last[0] >= h.cfg.forge_poll:
            last[0] = now
            answers(h, q)

    return poll


# --- checkpoints -----------------------------------------------------------------------------------


def checkpoint_reached(h: TaskContext, st: TaskState) -> TaskState:
    """A checkpoint of a plan from issues: its issue told how to answer it, and since when."""
    number = issue_of(h)
    if not number:
        return st
    body = (
        f"<!-- hive:checkpoint {h.key} -->\n**Hive** · `{h.key}` · this checkpoint waits for a person. "
        f"A collaborator with write access answers with a comment: `/approve`, or `/reject <what is wrong>` "
        f"(the task before it runs again, told why). Or, where Hive runs: `hive approve {h.key}`."
    )
    _post(h, number, body, "how to answer the checkpoint")
    return h.update(None, forge_since=time.time() - 1)


def decided(h: TaskContext, st: TaskState) -> bool:
    """Did a collaborator with write access `/approve` or `/reject` the checkpoint on its issue?
    If so, it is answered as `hive approve` answers it (True)."""
    from hive.actions.approve import approve_task

    number = issue_of(h)
    if not number or not st.forge_since:
        return False
    try:
        forge = h.forge()
        found, st = _commands(h, forge, number, st.forge_since, st, ("approve", "reject"))
    except (ForgeError, HiveError) as e:
        say(f"{h.key}: warning: could not read issue #{number}: {e}")
        return False
    for command in found:
        reject = (command.text or "rejected on the forge") if command.verb == "reject" else None
        try:
            said = approve_task(h.root, h.key, reject=reject)
        except HiveError as e:
            _reply(h, number, f"@{command.user}: not taken — {e}")
            done(h, command)
            continue
        done(h, command)
        _reply(h, number, f"@{command.user}: {said}")
        say(f"{h.key}: answered on the forge by @{command.user}: /{command.verb}")
        return True
    return False


def _quoted(text: str) -> str:
    return quoted(inert(text))


def inert(text: str) -> str:
    """Text an agent wrote (a reason, a question), made harmless in a comment: an @mention
    notifies nobody, and it cannot open an HTML comment that hides what follows or fakes a mark."""
    return text.replace("@", "@\u200b").replace("<!--", "&lt;!--")
