"""What the Extensible load manager decides: unloads, splits, their labels and reasons.

Follows apache/pulsar `pulsar-broker/.../loadbalance/extensions/models/`: `Unload` and `Split` (records,
@4bf8fab1 and @7ef95df7), `UnloadDecision` (the version TransferShedder @028ed629 and its test @0524997
use: one `Unload`, a `Label`, a `Reason`) and `SplitDecision` (@6e958350). Equality is field-wise, as
the Java records and Lombok `@Data` classes compare.

The JSON (rename="camel", an empty Optional as null) is what Jackson writes for these records; they
travel in decision events and the decision log, not through a system topic.
"""

from __future__ import annotations

import msgspec

from emulator.model.decision_labels import SplitLabel, SplitReason, UnloadLabel, UnloadReason

__all__ = [
    "Split",
    "SplitDecision",
    "SplitLabel",
    "SplitReason",
    "Unload",
    "UnloadDecision",
    "UnloadLabel",
    "UnloadReason",
]


class Unload(msgspec.Struct, frozen=True, rename="camel"):
    """`record Unload(sourceBroker, serviceUnit, Optional<String> destBroker)`.

    `dest_broker` None is an unload (the next lookup assigns the bundle), a broker id is a transfer
    (the destination is assigned before the source closes the bundle, PIP-307).
    """

    source_broker: str
    service_unit: str
    dest_broker: str | None = None


class UnloadDecision(msgspec.Struct, frozen=True):
    """`UnloadDecision(unload, label, reason)`: a planned unload (Success) or why nothing was planned."""

    unload: Unload | None
    label: UnloadLabel
    reason: UnloadReason


class Split(msgspec.Struct, frozen=True, rename="camel"):
    """`record Split(serviceUnit, sourceBroker, Map<String, Optional<String>> splitServiceUnitToDestBroker)`.

    The map goes from each child's range (`0x00000000_0x7fffffff`) to its destination broker, None
    for "stay on the source" (what the split strategy always writes).
    """

    service_unit: str
    source_broker: str
    split_service_unit_to_dest_broker: dict[str, str | None] = msgspec.field(default_factory=dict)


class SplitDecision(msgspec.Struct, frozen=True):
    """`SplitDecision(split, label, reason)`."""

    split: Split | None
    label: SplitLabel
    reason: SplitReason
