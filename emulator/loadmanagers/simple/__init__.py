"""SimpleLoadManagerImpl (`org.apache.pulsar.broker.loadbalance.impl`), the load manager before the
Modular one and the fallback when `loadManagerClassName` cannot be created.

`model/` holds its pure data and decisions (LoadReport JSON, quotas, ranking, placement, shedding,
split); `actors/simple_load_manager.py` is the broker side and `actors/simple_load_manager_tasks.py`
its watches and timers."""
