"""NoopLoadManager on the broker: `noop_load_manager.py`."""
