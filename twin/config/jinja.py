"""The Jinja2 environment of twin's templates (`twin/config/templates/`): strict, no surprises."""
from __future__ import annotations

import jinja2

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("twin.config", "templates"),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def render_template(name: str, **ctx) -> str:
    return _env.get_template(name).render(ctx)
