"""Durations as people write them: "90m", "2h", "1h30m" (or "1h 30m"), "30s", "250ms", or seconds.

The one grammar of the project, in the model layer so every layer uses it: scenario files, the command's
flags (`parse_flag_duration`: the same grammar, > 0, UsageError naming the flag), the pipeline's
`--window`, `Cluster.wait_until(pred, timeout="5m")` and the testing helpers. Milliseconds are allowed
(metadata-store and network latencies are sub-second).
"""

from __future__ import annotations

import math
import re

from .errors import UsageError

__all__ = ["format_duration", "parse_duration", "parse_flag_duration"]

_PART = re.compile(r"\s*(\d+(?:\.\d+)?)(ms|h|m|s)")  # parts may be spaced: "1h 30m"
_EXAMPLES = "a duration like 90m, 2h, 1h30m, 30s, 250ms or a number of seconds"
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(value: object) -> float:
    """Seconds from a number (seconds) or a string of number+unit parts (`h`, `m`, `s`, `ms`).

    Raises ValueError (bad text, NaN, infinity) or TypeError (not a number or string). Negative values
    parse (a leading `-`), so the caller can say *why* they are wrong where it knows the key.
    """
    if isinstance(value, bool):
        raise TypeError(f"expected a duration like 90m, 2h, 30s or a number of seconds, got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _parse_text(value)
    else:
        raise TypeError(f"expected a duration like 90m, 2h, 30s or a number of seconds, got {value!r}")
    if math.isnan(seconds) or math.isinf(seconds):
        raise ValueError(f"expected a finite duration, got {value!r}")
    return seconds


def _parse_text(text: str) -> float:
    body = text.strip()
    sign = 1.0
    if body.startswith("-"):
        sign, body = -1.0, body[1:].strip()
    try:
        return sign * float(body)
    except ValueError:
        pass
    pos, total = 0, 0.0
    seen: list[str] = []
    for m in _PART.finditer(body):
        if m.start() != pos or m.group(2) in seen:
            break
        seen.append(m.group(2))
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    if not body or pos != len(body):
        raise ValueError(f"expected {_EXAMPLES}")
    return sign * total


def parse_flag_duration(text: str, *, flag: str = "--duration") -> float:
    """A command-line flag's duration in seconds: the grammar above, positive and finite, or UsageError
    naming the flag and the value (`--window = '0': must be a positive, finite duration`)."""
    try:
        seconds = parse_duration(text)
    except (TypeError, ValueError):
        raise UsageError(f"{flag} = {text!r}: expected {_EXAMPLES}") from None
    if not seconds > 0:
        raise UsageError(f"{flag} = {text!r}: must be a positive, finite duration")
    return seconds


def format_duration(seconds: float) -> str:
    """The shortest exact spelling of whole-second durations ("2h", "1h30m", "45s"); others as "1.5s"."""
    if seconds < 0:
        return "-" + format_duration(-seconds)
    if seconds != int(seconds):
        return f"{seconds:g}s"
    s = int(seconds)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    parts = [f"{h}h" if h else "", f"{m}m" if m else "", f"{s}s" if s else ""]
    return "".join(parts) or "0s"
