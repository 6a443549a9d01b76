"""The feed worker: polls the upstream feed service, fetches new items in batches, and writes them out.

Run `python worker.py --check` to validate config.toml without fetching anything.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("worker")

MIN_FETCH_TIMEOUT = 1.0  # seconds: the upstream's p99 is ~0.8 s, so anything less times out under load


@dataclass
class Settings:
    base_url: str
    fetch_timeout: float
    retries: int
    retry_backoff: float
    batch_size: int
    poll_interval: int
    max_item_bytes: int
    out_dir: Path
    keep_days: int


def load_settings(path: Path) -> Settings:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    upstream, worker, output = data["upstream"], data["worker"], data["output"]
    return Settings(
        base_url=upstream["base_url"].rstrip("/"),
        fetch_timeout=float(upstream["fetch_timeout"]),
        retries=int(upstream.get("retries", 3)),
        retry_backoff=float(upstream.get("retry_backoff", 2.0)),
        batch_size=int(worker["batch_size"]),
        poll_interval=int(worker["poll_interval"]),
        max_item_bytes=int(worker.get("max_item_bytes", 256 * 1024)),
        out_dir=Path(output["directory"]),
        keep_days=int(output.get("keep_days", 14)),
    )


def problems(settings: Settings) -> list[str]:
    """What is wrong with the settings, one sentence each; empty when they are fine."""
    found = []
    if not settings.base_url.startswith(("http://", "https://")):
        found.append(f"upstream.base_url must be an http(s) URL, not {settings.base_url!r}")
    if settings.fetch_timeout < MIN_FETCH_TIMEOUT:
        found.append(f"upstream.fetch_timeout is {settings.fetch_timeout} s; the upstream needs at least "
                     f"{MIN_FETCH_TIMEOUT} s (is it in milliseconds by mistake?)")
    if settings.retries < 0:
        found.append("upstream.retries cannot be negative")
    if not 1 <= settings.batch_size <= 500:
        found.append(f"worker.batch_size must be 1-500, not {settings.batch_size}")
    if settings.poll_interval < 5:
        found.append("worker.poll_interval under 5 s would flood the upstream")
    return found


def fetch_batch(settings: Settings, cursor: str | None) -> tuple[list[dict], str | None]:
    """One batch from the upstream, retried with backoff. (The HTTP call is left out of this copy.)"""
    for attempt in range(settings.retries + 1):
        try:
            return request_items(settings, cursor)
        except TimeoutError:
            log.warning("fetch timed out after %.1f s (attempt %d of %d)", settings.fetch_timeout, attempt + 1,
                        settings.retries + 1)
            time.sleep(settings.retry_backoff * 2 ** attempt)
    raise TimeoutError(f"fetch exceeded {settings.fetch_timeout}s after {settings.retries + 1} attempts")


def request_items(settings: Settings, cursor: str | None) -> tuple[list[dict], str | None]:
    raise TimeoutError  # stands in for the HTTP request in this copy


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("config.toml"))
    parser.add_argument("--check", action="store_true", help="validate the settings and exit")
    args = parser.parse_args(argv)
    settings = load_settings(args.config)
    if found := problems(settings):
        for problem in found:
            print(f"config error: {problem}", file=sys.stderr)
        return 1
    if args.check:
        print(f"config ok: {settings.base_url}, timeout {settings.fetch_timeout} s, batches of {settings.batch_size}")
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    cursor = None
    while True:
        items, cursor = fetch_batch(settings, cursor)
        log.info("fetched %d items", len(items))
        time.sleep(settings.poll_interval)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
