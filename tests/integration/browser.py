"""Open a page in headless Chromium (Debian's `chromium` package) as a person would: the DOM after
its scripts ran, the script errors it raised, a screenshot."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

FLAGS = ["--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", "--virtual-time-budget=5000",
         "--enable-logging=stderr", "--v=0"]


@dataclass
class Rendered:
    dom: str
    errors: list[str]              # script errors: the page's own record, and Chromium's console log
    rendered: dict[str, int] | None  # the page's data-rendered counts, None when its script never finished


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "no chromium on PATH: install it (apt-get install -y chromium; .ci/run does)"
    return path


def open_page(page: Path, profile: Path) -> Rendered:
    """Load `page` (a file) and return its DOM once the scripts ran."""
    p = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.resolve().as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    html_tag = re.search(r"<html[^>]*>", p.stdout)
    tag = html_tag.group(0) if html_tag else ""
    errors = [m.group(1) for m in re.finditer(r'data-js-errors="([^"]*)"', tag)]
    errors += [line for line in p.stderr.splitlines() if "CONSOLE" in line and "Uncaught" in line]
    counts = re.search(r'data-rendered="([^"]*)"', tag)
    rendered = ({k: int(v) for k, v in (kv.split("=") for kv in counts.group(1).split())} if counts else None)
    return Rendered(p.stdout, errors, rendered)


def screenshot(page: Path, png: Path, profile: Path, size: str = "1400,2000") -> Path:
    p = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", f"--screenshot={png}",
                        f"--window-size={size}", page.resolve().as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and png.is_file(), p.stderr[-2000:]
    return png
