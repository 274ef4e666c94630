"""hive/store/usage.py and hive/settings/prices.py: tokens and cost per attempt,
summed per task and per run, priced by the table unless the CLI said its total."""

from __future__ import annotations

import os

import pytest

from hive.errors import HiveError
from hive.settings.config import load_config
from hive.settings.prices import DEFAULT_PRICES, cost_usd, price_of
from hive.store.paths import Paths
from hive.store.state import TaskState
from hive.store.usage import RUN_STARTED, attempt_entry, described, last_run, record_run, task_totals, totals_of


def test_the_longest_matching_pattern_prices_a_model():
    table = {**DEFAULT_PRICES, "claude-opus-4-8": (1.0, 2.0)}
    assert price_of("claude-opus-4-8", table) == (1.0, 2.0)
    assert price_of("claude-opus-4-1", table) == (15.0, 75.0)
    assert price_of("openai/gpt-5", table) == (1.25, 10.0)
    assert price_of("my-local-model", table) is None
    assert cost_usd("claude-sonnet-4", 1_000_000, 100_000, table) == pytest.approx(3.0 + 1.5)


def test_an_attempt_entry_prefers_the_clis_own_total():
    assert attempt_entry(1000, 100, 0.5, "claude-opus-4-8", DEFAULT_PRICES)["cost_usd"] == 0.5
    priced = attempt_entry(1_000_000, 0, None, "claude-opus-4-8", DEFAULT_PRICES)
    assert (priced["cost_usd"], priced["cost_from"]) == (15.0, "price")
    unknown = attempt_entry(10, 1, None, "mystery", DEFAULT_PRICES)
    assert (unknown["cost_usd"], unknown["cost_from"]) == (None, "")


def entry(cost: float | None, started: float = 100.0) -> dict:
    return {"started_at": started, "usage": {"tokens_in": 1000, "tokens_out": 100, "cost_usd": cost}}


def test_task_totals_sum_closed_attempts_and_the_running_one_once():
    st = TaskState(
        "p", "1", state="in_progress", started_at=300.0, history=(entry(0.25), entry(0.5, 200.0)),
        usage={"tokens_in": 10, "tokens_out": 1, "cost_usd": 0.01},
    )  # fmt: skip
    totals = task_totals(st)
    assert (totals.tokens_in, totals.tokens_out, round(totals.cost_usd, 2)) == (2010, 201, 0.76)
    assert round(task_totals(st, since=150.0).cost_usd, 2) == 0.51  # this run: attempts started since
    assert described(totals) == "2.0k in / 201 out, $0.76"


def test_a_price_nobody_knew_is_said_not_hidden():
    st = TaskState("p", "1", history=(entry(None),))
    totals = totals_of([st, TaskState("p", "2", history=(entry(1.0),))])
    assert not totals.cost_known and totals.as_json() == {"tokens_in": 2000, "tokens_out": 200, "cost_usd": 1.0}
    assert described(task_totals(st)) == "1.0k in / 100 out, cost unknown"


def test_budget_and_price_config(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[budget]\ntask_usd = 2\nrun_usd = 10.5\n[prices]\n"my-model" = { input = 1, output = 4 }\n')
    cfg = load_config(path)
    assert (cfg.budget_task_usd, cfg.budget_run_usd, cfg.prices["my-model"]) == (2.0, 10.5, (1.0, 4.0))
    assert cfg.prices["claude-opus-*"] == DEFAULT_PRICES["claude-opus-*"]
    path.write_text('[budget]\ntask_usd = "lots"\n[prices]\n"m" = 3\n')
    with pytest.raises(HiveError) as e:
        load_config(path)
    assert any("task_usd" in p for p in e.value.problems) and any('"m"' in p for p in e.value.problems)


def test_a_run_records_its_start_and_pid_for_the_dashboard(tmp_path, monkeypatch):
    paths = Paths(tmp_path)
    assert last_run(paths) == (0.0, 0), "no run began yet"
    monkeypatch.setenv(RUN_STARTED, "1234.5")
    record_run(paths)
    assert last_run(paths) == (1234.5, os.getpid())
    paths.run_record.write_text("{torn")
    assert last_run(paths) == (0.0, 0)
