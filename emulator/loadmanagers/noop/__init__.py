"""NoopLoadManager (`org.apache.pulsar.broker.loadbalance`): registers the broker and decides nothing."""
