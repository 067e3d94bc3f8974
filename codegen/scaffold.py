"""The Jinja2 side of the code generator: one environment over the `templates/` package data.

Templates hold the fixed scaffolding of the body and the header helpers; they take plain data
(numbers, names, already printed statements), never IR.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import jinja2


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    root = resources.files("triton_metal.templates")
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render(name: str, **data: object) -> str:
    return environment().get_template(name).render(**data)
