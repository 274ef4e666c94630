"""What tokens cost: USD per million input and output tokens, by model name
(shell-style patterns; the longest matching pattern wins). `[prices]` in config
adds to or overrides this table, e.g. `"claude-opus-*" = { input = 15, output = 75 }`.

The figures are list prices when this table was written; a CLI that reports its
own total (Claude's result event, Aider's session cost) is believed instead.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Any

from hive.errors import HiveError

Price = tuple[float, float]  # USD per million (input, output) tokens

DEFAULT_PRICES: dict[str, Price] = {
    "claude-opus-*": (15.0, 75.0),
    "claude-sonnet-*": (3.0, 15.0),
    "claude-haiku-*": (1.0, 5.0),
    "*opus*": (15.0, 75.0),
    "*sonnet*": (3.0, 15.0),
    "*haiku*": (1.0, 5.0),
    "gpt-5*": (1.25, 10.0),
    "*gpt-5*mini*": (0.25, 2.0),
    "o3*": (2.0, 8.0),
    "o4-mini*": (1.1, 4.4),
    "gpt-4.1*": (2.0, 8.0),
    "gpt-4o*": (2.5, 10.0),
    "gemini-*-pro*": (1.25, 10.0),
    "gemini-*-flash*": (0.3, 2.5),
    "gemini-*-flash-lite*": (0.1, 0.4),
}


def price_of(model: str, table: dict[str, Price]) -> Price | None:
    name = re.sub(r"\[\w+\]$", "", model.rsplit("/", 1)[-1])  # "openai/gpt-5" → "gpt-5"; "x[1m]" → "x"
    matches = [p for p in table if fnmatchcase(name, p) or fnmatchcase(model, p)]
    return table[max(matches, key=len)] if matches else None


def cost_usd(model: str, tokens_in: int, tokens_out: int, table: dict[str, Price]) -> float | None:
    price = price_of(model, table)
    if price is None:
        return None
    return (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000


def prices_from_table(table: Any, where: str) -> dict[str, Price]:
    if not isinstance(table, dict):
        raise HiveError(f'{where} must be a table of "model-pattern" = {{ input = 3.0, output = 15.0 }}')
    out: dict[str, Price] = {}
    problems = []
    for model, entry in table.items():
        values = [entry.get(k) for k in ("input", "output")] if isinstance(entry, dict) else []
        if (
            not isinstance(entry, dict)
            or set(entry) != {"input", "output"}
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in values)
        ):
            problems.append(
                f'{where}."{model}" must be {{ input = <USD per million tokens>, output = <USD per million tokens> }}'
            )
            continue
        out[model] = (float(entry["input"]), float(entry["output"]))
    if problems:
        raise HiveError(*problems)
    return out
