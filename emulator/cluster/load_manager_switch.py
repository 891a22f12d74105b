"""Changing a broker's load manager: which changes Pulsar supports, and the warning for the others.

Pulsar's `loadManagerClassName` is dynamic (`@FieldContext(dynamic = true)` in ServiceConfiguration;
BrokerService.updateConfigurationAndRegisterListeners validates a new value with `Class.forName` only
and registers a listener that runs `LoadManager.create`, `stop()` on the old manager, `start()` on the
new one). So `pulsar-admin brokers update-dynamic-config --config loadManagerClassName` is accepted for
any class, and every broker swaps its manager live. Pulsar's docs ("Migration",
concepts-broker-load-balancing-migration) support that live change from Simple to Modular only:
"Migrate from modular to extensible" (and back) is done in broker.conf with a restart of the cluster
("The pulsar-admin tool is not supported for this migration"). The emulator runs what Pulsar's code
does when an operator changes it live anyway (broker.py: the live switch) and says so: a structlog
warning and a `LoadManagerSwitchUnsupported` event per broker, which the run's summary lists.

Why it is unsupported, in Pulsar's code: ownership lives in ZooKeeper's `/namespace/<bundle>` locks for
the Modular, Simple and Noop managers and in the service-unit state channel for the Extensible one
(NamespaceService asks `ExtensibleLoadManagerImpl.isLoadManagerExtensionEnabled(pulsar)`, i.e. which
manager the broker holds, on every lookup). A broker swapped live keeps the bundles it owned through
the other mechanism; the new one knows nothing of them and assigns them again: two owners.
"""

from __future__ import annotations

from .load_manager import EXTENSIBLE

__all__ = ["MIGRATION_DOCS", "switch_supported", "unsupported_switch_message"]

MIGRATION_DOCS = "https://pulsar.apache.org/docs/next/concepts-broker-load-balancing-migration/"
"""Pulsar's docs page on changing the load manager (pulsar-site
docs/concepts-broker-load-balancing-migration.md)."""


def switch_supported(previous: str, current: str) -> bool:
    """Whether Pulsar supports changing the load manager from `previous` to `current` live: not
    when one of them is the Extensible load manager and the other is not (the docs' "Migrate from
    modular to extensible" and back: broker.conf and a restart)."""
    return (previous == EXTENSIBLE) == (current == EXTENSIBLE)


def unsupported_switch_message(previous: str, current: str) -> str:
    """The warning's text: what happened and what Pulsar says to do instead."""
    return (f"loadManagerClassName changed live from {_short(previous)} to {_short(current)}: Pulsar "
            "accepts it (the key is dynamic) but does not support it (its docs: change broker.conf and "
            f"restart; {MIGRATION_DOCS}); bundles owned through the old manager are not known to the new one")


def _short(class_name: str) -> str:
    return class_name.rsplit(".", 1)[-1] or "(blank)"
