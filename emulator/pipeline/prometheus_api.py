"""Prometheus' HTTP API as the roll-up reads it: `query_range` in chunks, the server's URL and the times.

    series = query_range("http://127.0.0.1:9090", "pulsar_lb_cpu_usage", start, end, step)

Prometheus refuses a range query of more than 11,000 points per series ("exceeded maximum resolution
of 11,000 points per timeseries"), so a long range is asked in chunks of at most `MAX_POINTS` steps,
each starting one step after the last one ended (no point twice), and the chunks' series are joined
by their labels. The points are the evaluation instants start, start + step, ...: at each, a series'
value is its latest sample at or before it (Prometheus' lookback), so a step shorter than the scrape
interval sees some scrapes twice and a longer one skips some.

Times on the command line (`parse_time`): RFC 3339 (`2024-05-01T09:00:00Z`, an offset required, as
Prometheus' own API takes them), unix seconds (`1714554000`), or `now` / `now-1h30m` with the duration
grammar of `emulator/model/durations.py`. Every failure (a URL that is not http(s), a server that does
not answer, Prometheus' own error reply, a time it cannot read) is one `UsageError` line: exit code 2.

Only the standard library (urllib): the project has no HTTP client dependency.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import urllib.error
import urllib.parse
import urllib.request
from typing import Callable, Iterator, Mapping

import msgspec

from emulator.model.durations import parse_duration
from emulator.model.errors import UsageError

__all__ = ["MAX_POINTS", "Series", "chunks", "parse_series", "parse_time", "parse_url", "query_range"]

MAX_POINTS = 11_000
"""Prometheus' limit on the points of one series in one range query (`query_range`'s `step` check)."""
TIMEOUT = 60.0
"""Seconds to wait for one reply; a chunk of 11,000 steps of a few hundred series answers in ~1 s."""

Fetch = Callable[[str, Mapping[str, str]], bytes]
"""(URL, form parameters) -> the reply's body: `http_post`, or a canned reply in tests."""


class Series(msgspec.Struct, frozen=True):
    """One series of a range query: its labels (`__name__` included) and its (unix time, value) points,
    in time order. Values Prometheus writes as "NaN", "+Inf" or "-Inf" are kept as floats."""

    labels: dict[str, str]
    points: list[tuple[float, float]]

    @property
    def name(self) -> str:
        return self.labels.get("__name__", "")


# ====================================================================== the command line's inputs


def parse_url(text: str, flag: str = "--prometheus") -> str:
    """An http(s) URL of a Prometheus server (its root, or a path prefix it is served under), without
    the trailing slash."""
    parts = urllib.parse.urlsplit(str(text).strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"{flag} = {text!r}: expected the server's http(s) URL, e.g. {flag} "
                         "http://127.0.0.1:9090")
    if parts.query or parts.fragment:
        raise UsageError(f"{flag} = {text!r}: expected the server's URL without a query or fragment "
                         f"(the API path is added: {parts.scheme}://{parts.netloc}/api/v1/query_range)")
    try:
        parts.port  # noqa: B018 - raises ValueError on a port out of range
    except ValueError:
        raise UsageError(f"{flag} = {text!r}: bad port") from None
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


_TIME_EXAMPLES = "RFC 3339 (2024-05-01T09:00:00Z), unix seconds (1714554000) or now-1h"


def parse_time(text: str, now: float, flag: str) -> float:
    """Unix seconds from RFC 3339 with an offset, unix seconds, `now` or `now-<duration>`."""
    raw = str(text).strip()
    if raw.lower().startswith("now"):
        rest = raw[3:].strip()
        if not rest:
            return now
        if rest[0] != "-":
            raise UsageError(f"{flag} = {text!r}: expected now or now-<duration> (now-1h, now-90m)")
        try:
            back = parse_duration(rest[1:].strip())
        except (TypeError, ValueError):
            raise UsageError(f"{flag} = {text!r}: expected now-<duration>, e.g. now-1h or now-1h30m") from None
        if back < 0:
            raise UsageError(f"{flag} = {text!r}: expected now-<duration> with a positive duration")
        return now - back
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds) or seconds < 0:
            raise UsageError(f"{flag} = {text!r}: expected {_TIME_EXAMPLES}")
        return seconds
    try:
        when = dt.datetime.fromisoformat(raw.replace("z", "Z").replace("t", "T"))
    except ValueError:
        raise UsageError(f"{flag} = {text!r}: expected {_TIME_EXAMPLES}") from None
    if "T" not in raw.upper() and " " not in raw:
        raise UsageError(f"{flag} = {text!r}: expected a date and a time, e.g. 2024-05-01T09:00:00Z")
    if when.tzinfo is None:
        raise UsageError(f"{flag} = {text!r}: no offset; RFC 3339 needs one, e.g. {raw}Z for UTC")
    return when.timestamp()


# ====================================================================== range queries


def chunks(start: float, end: float, step: float, max_points: int = MAX_POINTS) -> Iterator[tuple[float, float]]:
    """(start, end) of each request: at most `max_points` evaluation instants each, the next one
    starting one step after the last instant of the one before, together every instant of
    start, start + step, ... <= end once."""
    if not step > 0 or not math.isfinite(step):
        raise ValueError(f"step = {step!r}: must be a finite number > 0")
    if max_points < 1:
        raise ValueError(f"max_points = {max_points!r}: must be >= 1")
    total = int(math.floor((end - start) / step + 1e-9)) + 1 if end >= start else 0
    k = 0
    while k < total:
        n = min(max_points, total - k)
        yield start + k * step, start + (k + n - 1) * step
        k += n


def http_post(url: str, form: Mapping[str, str]) -> bytes:
    """POST the form (Prometheus takes query_range's parameters as a form too: no URL length limit);
    the body of an HTTP error is returned as well, since Prometheus puts its reason there."""
    data = urllib.parse.urlencode(form).encode()
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded",
                                              "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as reply:
            return reply.read()
    except urllib.error.HTTPError as e:
        body = e.read()
        if body[:1] == b"{":
            return body
        raise UsageError(f"{url}: HTTP {e.code} {e.reason}; is this a Prometheus server?") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", None) or e
        raise UsageError(f"{url}: cannot reach the Prometheus server ({reason})") from None


def parse_series(body: bytes, where: str) -> list[Series]:
    """A query_range reply in Prometheus' documented shape (`{"status": "success", "data":
    {"resultType": "matrix", "result": [{"metric": {...}, "values": [[t, "v"], ...]}]}}`) -> its series;
    an error reply or another shape -> UsageError naming `where`."""
    try:
        reply = json.loads(body)
    except ValueError:
        raise UsageError(f"{where}: the reply is not JSON; is this a Prometheus server?") from None
    if not isinstance(reply, dict):
        raise UsageError(f"{where}: unexpected reply {str(reply)[:80]!r}")
    if reply.get("status") != "success":
        raise UsageError(f"{where}: Prometheus says {reply.get('errorType', 'error')}: "
                         f"{str(reply.get('error', reply))[:300]}")
    data = reply.get("data") or {}
    if data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise UsageError(f"{where}: expected a matrix result, got {str(data)[:120]!r}")
    out: list[Series] = []
    for item in data["result"]:
        labels = {str(k): str(v) for k, v in (item.get("metric") or {}).items()}
        points = [(float(t), float(v)) for t, v in item.get("values") or ()]
        out.append(Series(labels, points))
    return out


def query_range(url: str, query: str, start: float, end: float, step: float, *,
                fetch: Fetch = http_post, max_points: int = MAX_POINTS) -> list[Series]:
    """Every series of `query` over [start, end] at `step` (seconds), asked in chunks of at most
    `max_points` instants and joined by label set; series sorted by their labels."""
    api = f"{url}/api/v1/query_range"
    joined: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
    for lo, hi in chunks(start, end, step, max_points):
        form = {"query": query, "start": _num(lo), "end": _num(hi), "step": _num(step)}
        for s in parse_series(fetch(api, form), f"{api} ({query})"):
            joined.setdefault(tuple(sorted(s.labels.items())), []).extend(s.points)
    return [Series(dict(key), sorted(points)) for key, points in sorted(joined.items())]


def _num(x: float) -> str:
    """A number as Prometheus reads it: integral values without '.0', others with up to ms digits."""
    return str(int(x)) if x == int(x) else f"{x:.3f}"

