"""The Jinja2 environment of twin's templates (`twin/config/templates/`): strict, no surprises."""

from __future__ import annotations

import jinja2

from twin.config.safetext import UnsafeText, finalize, template_line

_env = jinja2.Environment(
    finalize=finalize,  # no value writes a line of its own (twin.config.safetext)
    loader=jinja2.PackageLoader("twin.config", "templates"),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def render_template(name: str, **ctx: object) -> str:
    """The template rendered; UnsafeText (with the template's line) for a value holding a control character."""
    try:
        return _env.get_template(name).render(ctx)
    except UnsafeText as e:
        file = name.rsplit("/", 1)[-1].removesuffix(".j2")
        raise UnsafeText(e.value, f"{file} ({template_line(e) or name})") from None
