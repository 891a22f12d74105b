"""ExtensibleLoadManagerImpl (`org.apache.pulsar.broker.loadbalance.extensions`, PIP-192).

`model/` holds the pure rules (service-unit states and their conflict resolution, the channel's
handler and clean-up rules, load data, filters, the split strategy); `actors/` the broker side (system
topics and table views, the service-unit state channel, reporters, schedulers, `extensible_wrapper.py`).
Its placement strategy and shedder are `strategies.extensible_least_resource_usage` and
`shedders.transfer_shedder`."""
