"""The Jinja2 environment of the HTML pages: templates, style and script from this folder,
inlined into each page (a report must open offline, without any other file)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import jinja2
from markupsafe import Markup

HERE = Path(__file__).parent / "templates"


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals["inline"] = lambda name: Markup((HERE / name).read_text(encoding="utf-8"))
    return env


def render(template: str, **context) -> str:
    return _env().get_template(template).render(**context)
