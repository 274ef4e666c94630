"""`hive web`: serve the dashboard (hive/web) and say where it is."""

from __future__ import annotations

import argparse

from hive.project import load_repo_config
from hive.store.paths import find_root


def run(args: argparse.Namespace) -> int:
    from hive.web.app import serve  # Starlette and uvicorn load for this verb only

    root = find_root()
    token = args.token or load_repo_config(root).web_token

    def announce(url: str) -> None:
        print(f"hive: the dashboard is at {url} (Ctrl-C stops it)", flush=True)

    serve(root, args.host, args.port, token, args.read_only, announce)
    return 0
