"""Pulsar's Extensible Load Manager (PIP-192, `loadbalance/extensions/`) as pure data and decisions.

No actors, clock, I/O or logging here: the broker-side load manager (layer 4) holds the tables,
sleeps, publishes and closes topics; these modules say what Pulsar's code decides at each step. One
module per concern, each naming the Pulsar file and method it follows in its docstring:

| module | Pulsar (`pulsar-broker/.../loadbalance/extensions/`) |
|---|---|
| `state` | `channel/ServiceUnitState`, `ServiceUnitStateData`, `ServiceUnitStateDataConflictResolver` |
| `channel_rules` | `channel/ServiceUnitStateChannelImpl`: who acts on each state, the records published, lookups |
| `channel_cleanup` | `channel/ServiceUnitStateChannelImpl`: the leader's monitorOwnerships, doCleanup |

Sibling modules (load data, TransferShedder, placement, filters, split) follow the same rules.
"""
