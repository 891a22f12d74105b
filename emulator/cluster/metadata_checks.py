"""The metadata store's argument checks: messages are not validated on construction, so the store
checks each field as it handles the message (one clear error naming the argument)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["check_data", "check_session_id", "check_version", "require_session_id", "under_any", "wanted"]


def _under(path: str, prefix: str) -> bool:
    return prefix == "/" or path == prefix or path.startswith(prefix) and path[len(prefix)] == "/"


def under_any(path: str, prefixes: Mapping[str, object]) -> bool:
    return any(_under(path, prefix) for prefix in prefixes)


def wanted(path: str, kind: str, prefixes: Mapping[str, frozenset[str] | None]) -> bool:
    """`path` is at or under one of `prefixes` whose kinds (None: all) include `kind`."""
    return any(_under(path, prefix) and (kinds is None or kind in kinds) for prefix, kinds in prefixes.items())


def check_data(data: object) -> bytes:
    if not isinstance(data, bytes):
        raise TypeError(f"data must be bytes (encode str or JSON first), "
                        f"got {type(data).__name__}: {data!r:.60}")
    return data


def check_version(version: object) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or version < -1:
        raise ValueError(
            f"expected_version = {version!r}: must be an int >= 0, or -1 for any version"
        )
    return version


def check_session_id(session_id: object) -> int | None:
    if session_id is None:
        return None
    return require_session_id(session_id, "session_id")


def require_session_id(session_id: object, argument: str) -> int:
    if isinstance(session_id, bool) or not isinstance(session_id, int):
        raise TypeError(f"{argument} must be an int from OpenSession, got {session_id!r}")
    return session_id
