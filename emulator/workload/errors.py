"""The one error type of scenario files: a single line naming the file, the key path and the value."""

from __future__ import annotations

__all__ = ["MISSING", "ScenarioError", "render_value"]


_MISSING = object()


class ScenarioError(ValueError):
    """A scenario that cannot run as written.

    `str(e)` is one line: `<file>: <key path> = <value>: <what is wrong and what to do>`, e.g.
    `scenario.toml: events[2].at = -5s: times are offsets from the run start and must be >= 0`.
    """

    def __init__(self, source: str, path: str | None, value: object, reason: str) -> None:
        self.source = source
        self.path = path
        self.value = value
        self.reason = reason
        if path and value is _MISSING:
            super().__init__(f"{source}: {path}: {reason}")
        elif path:
            super().__init__(f"{source}: {path} = {render_value(value)}: {reason}")
        else:
            super().__init__(f"{source}: {reason}")


def render_value(value: object) -> str:
    """A TOML-like one-line rendering: bare words stay bare, other strings quoted, tables compact."""
    if value is _MISSING:
        return "(missing)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if value and all(c.isalnum() or c in "-_.:/+" for c in value):
            return value
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return '"' + escaped + '"'
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {render_value(v)}" for k, v in value.items())
        text = "{ " + inner + " }" if inner else "{}"
    elif isinstance(value, (list, tuple)):
        text = "[" + ", ".join(render_value(v) for v in value) + "]"
    else:
        text = repr(value) if isinstance(value, float) else str(value)
    return text if len(text) <= 120 else text[:117] + "..."


MISSING = _MISSING
