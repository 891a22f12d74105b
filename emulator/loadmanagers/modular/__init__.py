"""ModularLoadManagerImpl (`org.apache.pulsar.broker.loadbalance.impl`), Pulsar's default load manager.

`actors/modular_wrapper.py` is the broker side (ModularLoadManagerWrapper: load reports, lookups),
`actors/leader.py` the leader actor (its load-data cache, shedding and split cycles) and
`actors/modular_load_manager.py` the leader's decisions over the shared model (`emulator.model`,
`strategies/`, `shedders/`)."""
