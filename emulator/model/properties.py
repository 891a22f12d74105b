"""Config values as text: java.util.Properties syntax (broker.conf), the text a value is written back
as, Java's `String.valueOf` of a value (what Pulsar's runtime-configuration view shows), and the
reference table of the declared keys."""

from __future__ import annotations

import decimal
import math
import re

from .setting import Kind, Settings, Value

__all__ = ["java_string", "parse_properties", "property_text", "reference_table"]


def parse_properties(text: str) -> list[tuple[str, str]]:
    """java.util.Properties syntax: `k=v`, `k: v`, `k v`, `#`/`!` comments, `\\` continuations."""
    pairs: list[tuple[str, str]] = []
    logical = ""
    for line in text.splitlines():
        stripped = line.lstrip()
        if not logical and (not stripped or stripped[0] in "#!"):
            continue
        logical += stripped
        trailing = len(logical) - len(logical.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes continues the line
            logical = logical[:-1]
            continue
        match = re.match(r"((?:[^\s=:\\]|\\.)+)\s*[=:]?\s*(.*)$", logical)
        logical = ""
        if match:
            pairs.append((match.group(1).replace("\\", ""), match.group(2).strip()))
    return pairs


def property_text(value: object) -> str:
    """A value as broker.conf text, the form `to_properties` writes and the dynamic configuration
    stores: booleans `true`/`false`, lists comma separated, an empty Optional blank."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def java_string(value: Value, kind: Kind) -> str:
    """String.valueOf as Java renders a field: doubles as Double.toString, lists and sets as `[a, b]`,
    an Optional as `Optional[1.0]` / `Optional.empty`."""
    if kind == "optfloat":
        if value is None:
            return "Optional.empty"
        assert isinstance(value, (int, float)), value
        return f"Optional[{_java_double(value)}]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]"
    return str(value)


def reference_table(settings: Settings) -> str:
    """The declared keys as a Markdown table, in declaration order: key, type, default (as broker.conf
    text), dynamic, where Pulsar declares it, and the doc line (with why it is deprecated, if it is)."""
    rows = ["| key | type | default | dynamic | source | doc |", "|---|---|---|---|---|---|"]
    for d in settings:
        doc = d.setting.doc + (f" (deprecated: {d.setting.deprecated})" if d.setting.deprecated else "")
        default = property_text(d.default_value())
        rows.append(f"| `{d.key}` | {d.kind} | {f'`{default}`' if default else '(empty)'} "
                    f"| {'yes' if d.setting.dynamic else 'no'} | {d.setting.source} | {doc.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def _java_double(x: float) -> str:
    """Double.toString: plain decimal in [1e-3, 1e7), else `d.dddE±n`; always a fractional digit."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    a = abs(x)
    if 1e-3 <= a < 1e7:
        return sign + repr(a)  # Python's shortest repr has no exponent in this range
    digits, exponent = _shortest_digits(a)
    mantissa = digits[0] + "." + (digits[1:] or "0")
    return f"{sign}{mantissa}E{len(digits) - 1 + exponent}"


def _shortest_digits(a: float) -> tuple[str, int]:
    """(significant digits, exponent of the last digit) of a > 0 in its shortest round-trip form."""
    t = decimal.Decimal(repr(a)).normalize().as_tuple()
    return "".join(str(d) for d in t.digits), int(t.exponent)
