"""ModularLoadManagerImpl's actors: the broker side, the leader actor and the leader's decision core."""
