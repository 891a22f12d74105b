"""The run's load-manager changes Pulsar does not support, for the summary and run.json.

Listens to `LoadManagerSwitchUnsupported` (emulator/cluster/load_manager_switch.py says which changes
those are) and words each as one line naming the broker, the classes and Pulsar's docs page."""

from __future__ import annotations

from emulator.cluster.events import ClusterEvents, Event, LoadManagerSwitchUnsupported

__all__ = ["LoadManagerWarnings"]


def _short(class_name: str) -> str:
    return class_name.rsplit(".", 1)[-1] or "(blank)"


class LoadManagerWarnings:
    """One line per unsupported change, in the order they happened."""

    def __init__(self, events: ClusterEvents) -> None:
        self.lines: list[str] = []
        self._unsubscribe = events.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()

    def _on_event(self, e: Event) -> None:
        if not isinstance(e, LoadManagerSwitchUnsupported):
            return
        if e.how == "live":
            self.lines.append(
                f"{e.broker} at t={e.t:.1f} s: loadManagerClassName changed live from {_short(e.previous)} "
                f"to {_short(e.current)}, which Pulsar does not support (broker.conf and a restart: {e.docs})")
        else:
            self.lines.append(
                f"{e.broker} at t={e.t:.1f} s: restarted with {_short(e.requested)} in its broker.conf but "
                f"runs {_short(e.current)}, the value update-dynamic-config left in /admin/configuration "
                f"({e.docs})")
