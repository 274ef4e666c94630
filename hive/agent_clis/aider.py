"""Aider (`aider`): its profile; the reader of its plain-text output ("Tokens: 1.2k sent,
340 received. Cost: $0.01 message, $0.02 session." after each reply, and litellm's errors
by class name); where its model provider's key is."""

from __future__ import annotations

from hive.agent_clis.base import AgentCli, Reach
from hive.agent_clis.context import AgentContext, first_set
from hive.agent_clis.patterns import LazyPattern
from hive.agent_clis.profile import CONTEXT_FILE, PROMPT, AgentProfile
from hive.agent_clis.stream import StreamReader, Trouble, TroubleKind, one_line
from hive.checks import Check, fail, ok, shown

PROFILES = (
    AgentProfile(
        # aider edits and commits by itself and exits after one message; --yes-always
        # answers "no" to running shell commands, so it cannot call `hive done` itself.
        # --no-gitignore: its .aider* line in .gitignore would be merged into main.
        "aider",
        (
            "aider",
            "--yes-always",
            "--no-check-update",
            "--no-gitignore",
            "--no-analytics",
            "--read",
            CONTEXT_FILE,
            "--message",
            PROMPT,
        ),
        context_file="AGENTS.md",
        mode="headless",
        exit_zero_is_done=True,
        stream="aider",
        ignore=(".aider*",),
        state_paths=("~/.aider/",),
    ),
)

_TOKENS = LazyPattern(r"^Tokens: ([\d.]+)([kKmM]?) sent(?:, [^,]*)*?, ([\d.]+)([kKmM]?) received")
_SESSION = LazyPattern(r"\$(\d+(?:\.\d+)?) session")
_LITELLM = LazyPattern(r"\blitellm\.(\w+(?:Error|Exception|Timeout)):\s*(.*)")
_SCALE = {"": 1, "k": 1000, "m": 1_000_000}
# litellm's names for "no answer from the API" (its message may wrap at 80 columns)
_UNREACHABLE = ("APIConnectionError", "Timeout", "ServiceUnavailableError", "InternalServerError")


class AiderReader(StreamReader):
    def __init__(self) -> None:
        super().__init__(
            cli="aider", login_fix="set the API key of aider's model (e.g. OPENAI_API_KEY or ANTHROPIC_API_KEY)"
        )

    def text(self, line: str) -> None:
        m = _TOKENS.match(line)
        if m:
            self.add_usage(_count(m.group(1), m.group(2)), _count(m.group(3), m.group(4)))
            cost = _SESSION.search(line)
            if cost:
                self.usage.cli_cost_usd = float(cost.group(1))
            self.progress()
            return
        m = _LITELLM.search(line)
        if m:
            name, message = m.group(1), m.group(2)
            status = 401 if "Authentication" in name else 429 if "RateLimit" in name else None
            trouble = self.classified(f"{name}: {message}", status)
            if trouble is None and name in _UNREACHABLE:
                trouble = Trouble(TroubleKind.TRANSIENT, f"aider: the model API is unreachable ({one_line(message)})")
            if trouble is not None:
                self.found(trouble)
            return
        super().text(line)


def _count(number: str, scale: str) -> int:
    return int(float(number) * _SCALE[scale.lower()])


# --- what the doctor checks ---------------------------------------------------------------------

VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY")


def credentials(ctx: AgentContext) -> list[Check]:
    name, profile = f"[{ctx.profile.name}] credentials", ctx.profile.name
    if var := first_set(ctx, VARS):
        return [ok(name, f"{var} is set ({ctx.where(var)})", profile)]
    for path in (ctx.home / ".aider.conf.yml", ctx.root / ".aider.conf.yml"):
        if path.is_file():
            return [ok(name, f"{shown(path, ctx.home)} exists", profile)]
    return [
        fail(
            name,
            f"none found: {', '.join(VARS)} not set, no .aider.conf.yml in ~ or the repo",
            f"export your model provider's key (or set it in {ctx.section()} env), or put it in ~/.aider.conf.yml",
            profile,
        )
    ]


CLI = AgentCli(
    binary="aider",
    profiles=PROFILES,
    install="pipx install aider-chat",
    reader=AiderReader,
    credentials=credentials,
    # its model decides the provider: the two most used here; others through [sandbox] allow
    reach=Reach(
        hosts=("api.openai.com", "api.anthropic.com"),
        env=("AIDER_*", "OPENAI_*", "ANTHROPIC_*", "GEMINI_*", "OPENROUTER_*", "DEEPSEEK_*", "LITELLM_*"),
    ),
)
