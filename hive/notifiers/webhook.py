"""`[notify] webhook`: the event POSTed as JSON to an http(s) URL (checked when the config
is read), within a few seconds."""

from __future__ import annotations

from pathlib import Path

from hive import __version__
from hive.notifiers.base import Channel
from hive.settings.schema import Key

TIMEOUT = 5.0


def post(url: str, body: str, _root: Path, _event: str) -> list[str]:
    # here, not at the top: every `doit` and `hive` command loads the channels (~30 ms for these)
    import http.client
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url,
        data=body.encode(),
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": f"hive-agents/{__version__}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:  # http(s) only: checked in config
            response.read(65536)  # let the server finish its answer; what it says is not used
    except urllib.error.HTTPError as e:
        return [f"notify webhook {url} answered HTTP {e.code} {e.reason}"]
    except urllib.error.URLError as e:
        return [f"notify webhook {url} could not be reached: {e.reason}"]
    except (OSError, http.client.HTTPException, ValueError) as e:  # timeouts, resets, bad answers
        return [f"notify webhook {url} failed: {e or type(e).__name__}"]
    return []


CHANNEL = Channel(
    Key("notify", "webhook", "webhook", "url", None,
        "Each event is POSTed to it as JSON (given five seconds); a failure only warns.",
        example="https://hooks.example.com/hive"),
    post,
)  # fmt: skip
