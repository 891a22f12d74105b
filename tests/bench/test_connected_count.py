"""bench.restart's connected-producers count: when every producer was back after a disruption, and when
it last became full (a later blip, such as an Extensible transfer's 0.1 s, moves only the second)."""

from __future__ import annotations

from bench.restart import _Connected
from emulator.cluster.events import HandleConnected, HandleDisconnected, HandleReconnected


def feed(c: _Connected, *events: tuple[str, float]) -> None:
    for kind, t in events:
        if kind == "c":
            c(HandleConnected(t=t, client="x", topic="t", handle=1, broker="b"))
        elif kind == "r":
            c(HandleReconnected(t=t, client="x", topic="t", handle=1, broker="b", unavailable=0.0))
        else:
            c(HandleDisconnected(t=t, client="x", topic="t", handle=1, reason="r"))


def test_first_full_since_skips_later_blips():
    c = _Connected(2)
    feed(c, ("c", 1.0), ("c", 2.0),            # full at 2
         ("d", 10.0), ("d", 11.0), ("r", 15.0), ("r", 20.0),   # the restart: back at 20
         ("d", 100.0), ("r", 100.1))           # a transfer's blip
    assert c.first_full_since(12.0) == 20.0    # during the disruption: when all were back
    assert c.first_full_since(20.0) == 20.0
    assert c.first_full_since(50.0) == 50.0    # already full then
    assert c.first_full_since(100.05) == 100.1
    assert c.full_at == 100.1                  # the old figure: the last time it became full
    assert c.first_full_since(5.0) == 5.0


def test_never_full_again_gives_none():
    c = _Connected(2)
    feed(c, ("c", 1.0), ("c", 2.0), ("d", 3.0))
    assert c.first_full_since(3.0) is None and c.full_at is None
