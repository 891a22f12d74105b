"""Java arithmetic and collection behaviour that Pulsar decisions depend on (SimpleLoadManagerImpl most).

Python raises where Java returns Infinity or NaN, floors where Java truncates, and has no TreeMap.
These helpers give Java's answer so the decisions built on them match Pulsar's, quirks included.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from decimal import Decimal

__all__ = ["div", "jmin", "jmax", "to_long", "to_int", "idiv", "tree_map_order", "double_to_string"]

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def div(a: float, b: float) -> float:
    """Java double division: x/0 is ±Infinity, 0/0 is NaN."""
    if b == 0:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def jmin(a: float, b: float) -> float:
    """`Math.min(double, double)`: NaN if either is NaN."""
    if a != a or b != b:
        return math.nan
    return a if a <= b else b


def jmax(a: float, b: float) -> float:
    """`Math.max(double, double)`: NaN if either is NaN."""
    if a != a or b != b:
        return math.nan
    return a if a >= b else b


def to_long(x: float) -> int:
    """`(long) x`: truncation toward zero, NaN -> 0, saturating at the long range."""
    if x != x:
        return 0
    if x >= _LONG_MAX:
        return _LONG_MAX
    if x <= _LONG_MIN:
        return _LONG_MIN
    return int(x)


def to_int(x: int) -> int:
    """`Long.intValue()`: the low 32 bits, two's complement."""
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def idiv(a: int, b: int) -> int:
    """Java integer division (truncates toward zero; Python's `//` floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def double_to_string(x: float) -> str:
    """`Double.toString` for the finite values the load factors take (plain notation in
    [1e-3, 1e7), `d.dddE±n` outside it, as Java prints)."""
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        text = repr(x)
        return text if ("." in text or "e" in text) else text + ".0"
    _sign, digits, exp = Decimal(repr(abs(x))).normalize().as_tuple()
    text = "".join(map(str, digits))
    sci = len(text) + int(exp) - 1
    return f"{'-' if x < 0 else ''}{text[0]}.{text[1:] or '0'}E{sci}"


# --- java.util.TreeMap insertion (red-black), for comparators that never return 0 ---------------


class _Node:
    __slots__ = ("key", "left", "right", "parent", "red")

    def __init__(self, key: str, parent: _Node | None) -> None:
        self.key = key
        self.left: _Node | None = None
        self.right: _Node | None = None
        self.parent = parent
        self.red = True


def tree_map_order(keys: Iterable[str], compare: Callable[[str, str], int]) -> list[str]:
    """The iteration order of a `java.util.TreeMap` after `put`ting `keys` one by one.

    `NamespaceBundleStatsComparator` never returns 0 and is not transitive (its comparisons have
    thresholds), so the order depends on the tree's shape at each insertion: this replays
    `TreeMap.put` and `fixAfterInsertion` exactly (JDK 8-21 share them) and reads the tree in order.
    """
    root: _Node | None = None
    for key in keys:
        if root is None:
            root = _Node(key, None)
            root.red = False
            continue
        node: _Node | None = root
        parent = root
        cmp = 0
        while node is not None:
            parent = node
            cmp = compare(key, node.key)
            if cmp < 0:
                node = node.left
            elif cmp > 0:
                node = node.right
            else:  # an equal key replaces the value: the key set does not change
                break
        else:
            entry = _Node(key, parent)
            if cmp < 0:
                parent.left = entry
            else:
                parent.right = entry
            root = _fix_after_insertion(root, entry)
    out: list[str] = []
    stack: list[_Node] = []
    node = root
    while stack or node is not None:
        while node is not None:
            stack.append(node)
            node = node.left
        node = stack.pop()
        out.append(node.key)
        node = node.right
    return out


def _is_red(n: _Node | None) -> bool:
    return n is not None and n.red


def _rotate_left(root: _Node, p: _Node) -> _Node:
    r = p.right
    assert r is not None
    p.right = r.left
    if r.left is not None:
        r.left.parent = p
    r.parent = p.parent
    if p.parent is None:
        root = r
    elif p.parent.left is p:
        p.parent.left = r
    else:
        p.parent.right = r
    r.left = p
    p.parent = r
    return root


def _rotate_right(root: _Node, p: _Node) -> _Node:
    q = p.left
    assert q is not None
    p.left = q.right
    if q.right is not None:
        q.right.parent = p
    q.parent = p.parent
    if p.parent is None:
        root = q
    elif p.parent.right is p:
        p.parent.right = q
    else:
        p.parent.left = q
    q.right = p
    p.parent = q
    return root


def _fix_after_insertion(root: _Node, x: _Node) -> _Node:
    x.red = True
    while x is not root and x.parent is not None and x.parent.red:
        parent = x.parent
        grand = parent.parent
        assert grand is not None  # a red node is never the root
        if parent is grand.left:
            uncle = grand.right
            if _is_red(uncle):
                parent.red = False
                assert uncle is not None
                uncle.red = False
                grand.red = True
                x = grand
            else:
                if x is parent.right:
                    x = parent
                    root = _rotate_left(root, x)
                assert x.parent is not None and x.parent.parent is not None
                x.parent.red = False
                x.parent.parent.red = True
                root = _rotate_right(root, x.parent.parent)
        else:
            uncle = grand.left
            if _is_red(uncle):
                parent.red = False
                assert uncle is not None
                uncle.red = False
                grand.red = True
                x = grand
            else:
                if x is parent.left:
                    x = parent
                    root = _rotate_right(root, x)
                assert x.parent is not None and x.parent.parent is not None
                x.parent.red = False
                x.parent.parent.red = True
                root = _rotate_left(root, x.parent.parent)
    root.red = False
    return root
