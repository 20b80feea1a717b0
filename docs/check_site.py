"""Check the built documentation site in headless Chromium: serve it on localhost, render the
main pages, save a screenshot of each, and check the rendered page (after the theme's scripts
ran) for its title, the navigation and that every image loaded.

    python docs/check_site.py docs/_build/html docs/_build/screenshots
"""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

PAGES = {  # page -> text its rendered DOM must contain
    "index.html": "hxarray documentation",  # the root redirects here
    "docs/index.html": "hxarray documentation",
    "docs/getting-started.html": "First steps",
    "docs/devices.html": "Memory scopes",
    "docs/performance.html": "Pipelines",
    "docs/hal.html": "Writing a backend",
    "docs/random.html": "Where the numbers are made",
    "docs/_generated/namespace.html": "hxarray.asarray",
    "docs/_generated/devices.html": "select_device",
}
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=5000"]
# After the page's scripts ran: the number of images that failed to load, in the DOM's title.
PROBE = ("<script>window.addEventListener('load', () => { const bad = [...document.images]"
         ".filter(i => !i.complete || i.naturalWidth === 0).length; "
         "document.title = document.title + ' [broken images: ' + bad + ']'; });</script>")


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit("Chromium is not installed: `make docs-check` installs Debian's package")


def _serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def check(site: Path, shots: Path) -> list[str]:
    """Render every page of PAGES; the problems found."""
    browser = _chromium()
    shots.mkdir(parents=True, exist_ok=True)
    problems = []
    with tempfile.TemporaryDirectory() as work:
        staged = Path(work) / "site"
        shutil.copytree(site, staged)
        for page in PAGES:  # the image probe goes into the copies only
            path = staged / page
            path.write_text(path.read_text(encoding="utf-8").replace("</head>", PROBE + "</head>",
                                                                     1), encoding="utf-8")
        server, base = _serve(staged)
        try:
            for page, expected in PAGES.items():
                profile = Path(work) / "profile"
                command = [browser, *FLAGS, f"--user-data-dir={profile}"]
                shot = shots / (page.replace("/", "_").removesuffix(".html") + ".png")
                subprocess.run([*command, f"--screenshot={shot}", "--window-size=1280,1500",
                                base + page], capture_output=True, timeout=120, check=False)
                dom = subprocess.run([*command, "--dump-dom", base + page], capture_output=True,
                                     text=True, timeout=120, check=False).stdout
                if not shot.is_file() or shot.stat().st_size < 10_000:
                    problems.append(f"{page}: no screenshot")
                if expected not in dom:
                    problems.append(f"{page}: the rendered page lacks {expected!r}")
                if "bd-header" not in dom:
                    problems.append(f"{page}: the theme's navigation bar did not render")
                if "[broken images: 0]" not in dom:
                    problems.append(f"{page}: images failed to load (or the page did not "
                                    "finish loading)")
                failed = any(p.startswith(page + ":") for p in problems)
                print(f"{page:34s} {'PROBLEM' if failed else 'ok'}  {shot}")
        finally:
            server.shutdown()
    return problems


def main() -> None:
    site, shots = (Path(a) for a in sys.argv[1:3])
    problems = check(site, shots)
    for problem in problems:
        print(problem, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
