"""Pulsar's Extensible Load Manager on the broker side: its system topics, channel and schedulers.

The decisions are pure and live in `emulator.loadmanagers.extensible.model` (states, conflict resolver, channel
rules, load data, top bundles, split strategy), `shedders.transfer_shedder` and
`strategies.extensible_least_resource_usage`; this package holds the state, the clock and the
messages around them. One module per concern, each naming the Pulsar file and methods it follows:

| module | Pulsar (`pulsar-broker/.../loadbalance/extensions/`, or the client) |
|---|---|
| `topic_latency` | the emulated cost of a system-topic message (publish, delivery) |
| `system_topic` | a system topic: the keyed log, compaction with a strategy (`StrategicTwoPhaseCompactor`) |
| `table_view` | the client's `TableViewImpl` (`handleMessage`, listeners, `refreshAsync`) |
| `load_data_store` | `store/TableViewLoadDataStoreImpl` |
| `host` | `ChannelHost`: what the channel calls on its broker (`PulsarService`'s parts) |
| `channel` | `channel/ServiceUnitStateChannelImpl`: lookups, publishes, handlers, monitor, clean-up |
| `assignment` | `ExtensibleLoadManagerImpl.assign` / `getOrSelectOwnerAsync` |
| `managers` | `manager/UnloadManager`, `manager/SplitManager` |
| `reporters` | `reporter/BrokerLoadDataReporter`, `reporter/TopBundleLoadDataReporter` |
| `schedulers` | `scheduler/UnloadScheduler`, `scheduler/SplitScheduler` |
| `periodic` | `scheduleAtFixedRate` on the emulated clock |
| `extensible_wrapper` | `ExtensibleLoadManagerImpl` + `ExtensibleLoadManagerWrapper`: the broker's load manager |
| `selection` | `ExtensibleLoadManagerImpl.selectAsync`, `getContext`, the broker lookup-data cache |
| `admin` | `ExtensibleLoadManagerImpl.unloadNamespaceBundleAsync`, `splitNamespaceBundleAsync` |
| `decision_events` | the schedulers' and assignments' decisions as the cluster's events |

Nothing here imports the Modular broker (`broker.py`, `leader.py`): a broker actor plugs in by
implementing `ChannelHost` and feeding the reporters' inputs.
"""
