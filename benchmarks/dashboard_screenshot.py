"""The README's dashboard screenshots, taken from a live ``geosim dashboard``.

Starts the dashboard on ``pingan-medium`` with PingAn (ε = 0.6) (with ``--compare``:
those schedulers side by side; with ``--replay DIR``: a replay of saved results), plays
it in headless Chromium until the simulated time passes ``--until`` seconds, pauses,
and writes the page to ``--out``; prints the status lines shown, for the caption.
Needs the ``viz`` and ``test`` extras and Chromium at /usr/bin/chromium. Usage::

    python benchmarks/dashboard_screenshot.py [--until 600] [--out docs/img/dashboard.png]
    python benchmarks/dashboard_screenshot.py --compare pingan,flutter+mantri \
        --out docs/img/dashboard-compare.png
    python benchmarks/dashboard_screenshot.py --replay results/compare-003/pingan-medium \
        --until 3000 --out docs/img/dashboard-replay.png
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _served(url: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the dashboard did not answer at {url}")


def main() -> None:
    from playwright.sync_api import expect, sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("--until", type=float, default=600.0)
    parser.add_argument("--out", default=str(ROOT / "docs" / "img" / "dashboard.png"))
    parser.add_argument("--compare", help="schedulers side by side")
    parser.add_argument("--replay", metavar="DIR", help="saved results to replay")
    args = parser.parse_args()
    port = _free_port()
    if args.replay:
        what = [args.replay] + (["--compare", args.compare] if args.compare else [])
    elif args.compare:
        what = ["scenarios/pingan-medium.toml", "--compare", args.compare]
    else:
        what = ["scenarios/pingan-medium.toml", "--scheduler", "pingan[epsilon=0.6]"]
    side_by_side = bool(args.compare or args.replay)
    proc = subprocess.Popen(
        [sys.executable, "-m", "geosim.cli", "dashboard", *what, "--port", str(port)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        _served(url)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            height = 1220 if args.replay else 900   # room for a 2 × 2 grid of maps
            page = browser.new_page(viewport={"width": 1400, "height": height})
            page.goto(url)
            status = page.locator(".geosim-status-line").nth(1)
            shown_first = "img.geosim-compare-plots" if side_by_side else "img.geosim-cluster-map"
            expect(page.locator(shown_first)).to_be_visible(timeout=120_000)
            page.get_by_role("button", name="▶").click()
            while True:
                shown = re.search(r"simulated time ([0-9,]+) s", status.inner_text())
                if shown and float(shown.group(1).replace(",", "")) >= args.until:
                    break
                page.wait_for_timeout(500)
            page.get_by_role("button", name="❚❚").click()
            page.wait_for_timeout(1500)
            page.screenshot(path=args.out)
            print("\n".join(page.locator(".geosim-status-line").all_inner_texts()))
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
