"""Tokens and cost: per attempt (`TaskState.usage` while it runs, then its history
entry), summed per task and per run. An attempt's entry is
`{"tokens_in", "tokens_out", "cost_usd", "cost_from", "model"}` where `cost_from` is
"cli" (the CLI's own total), "price" (tokens × the price table) or "" (unknown)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hive.settings.prices import Price, cost_usd
from hive.store.files import atomic_write
from hive.store.paths import Paths
from hive.store.state import TaskState

RUN_STARTED = "HIVE_RUN_STARTED"  # set by the dodo loader in the doit process; its workers inherit it


def mark_run_start() -> None:
    os.environ[RUN_STARTED] = f"{time.time():.3f}"


def run_started() -> float:
    try:
        return float(os.environ.get(RUN_STARTED, "0"))
    except ValueError:
        return 0.0


def record_run(paths: Paths) -> None:
    """Write down that a run began (its start as its workers know it, and its pid): `hive web` reads
    how much of `[budget] run_usd` the latest run spent, and whether it still runs."""
    atomic_write(paths.run_record, json.dumps({"started": run_started(), "pid": os.getpid()}))


def last_run(paths: Paths) -> tuple[float, int]:
    """When the latest run began and its pid ((0, 0) when no run ever began)."""
    try:
        data = json.loads(paths.run_record.read_text())
        return float(data["started"]), int(data["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0, 0


def attempt_entry(
    tokens_in: int,
    tokens_out: int,
    cli_cost: float | None,
    model: str,
    prices: dict[str, Price],
    by_model: dict[str, tuple[int, int]] | None = None,
) -> dict[str, Any]:
    if by_model:
        parts = [cost_usd(m, i, o, prices) for m, (i, o) in by_model.items()]
        priced = sum(p for p in parts if p is not None) if all(p is not None for p in parts) else None
        model = model if model and model != "auto" else ", ".join(sorted(by_model))
    else:
        priced = cost_usd(model, tokens_in, tokens_out, prices) if model else None
    cost, source = (cli_cost, "cli") if cli_cost is not None else (priced, "price" if priced is not None else "")
    return {
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "cost_usd": round(cost, 6) if cost is not None else None,
        "cost_from": source,
        "model": model,
    }


@dataclass
class Totals:
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True  # False when an attempt used tokens at a price nobody knew

    def add(self, entry: Mapping[str, Any]) -> None:
        self.tokens_in += int(entry.get("tokens_in") or 0)
        self.tokens_out += int(entry.get("tokens_out") or 0)
        cost = entry.get("cost_usd")
        if isinstance(cost, (int, float)):
            self.cost_usd += float(cost)
        elif entry.get("tokens_in") or entry.get("tokens_out"):
            self.cost_known = False

    def merge(self, other: Totals) -> None:
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out
        self.cost_usd += other.cost_usd
        self.cost_known = self.cost_known and other.cost_known

    def as_json(self) -> dict[str, Any]:
        return {
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost_usd": round(self.cost_usd, 6) if self.cost_known or self.cost_usd else None,
        }


def attempts(st: TaskState, since: float = 0.0) -> Iterable[Mapping[str, Any]]:
    """The usage entry of each attempt started at or after `since` (the running one last), and
    of each review done since."""
    for h in st.history:
        if h.get("usage") and float(h.get("started_at") or 0) >= since:
            yield h["usage"]
    if st.usage and st.started_at >= since:
        yield st.usage
    for review in st.reviews:  # its reviewers' tokens and cost count as its own (budgets too)
        if review.usage and review.at >= since:
            yield review.usage


def task_totals(st: TaskState, since: float = 0.0) -> Totals:
    totals = Totals()
    for entry in attempts(st, since):
        totals.add(entry)
    return totals


def totals_of(states: Iterable[TaskState], since: float = 0.0) -> Totals:
    totals = Totals()
    for st in states:
        totals.merge(task_totals(st, since))
    return totals


def described(totals: Totals) -> str:
    """Like "12.3k in / 1.2k out, $0.42" ("" when nothing was used)."""
    if not (totals.tokens_in or totals.tokens_out):
        return ""
    money = usd(totals.cost_usd) if totals.cost_known else "cost unknown"
    return f"{count(totals.tokens_in)} in / {count(totals.tokens_out)} out, {money}"


def count(n: int) -> str:
    return f"{n / 1_000_000:.1f}M" if n >= 1_000_000 else f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def usd(amount: float) -> str:
    return f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.4f}"
