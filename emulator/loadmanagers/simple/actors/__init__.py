"""SimpleLoadManagerImpl on the broker: the load manager and its watches and timers."""
