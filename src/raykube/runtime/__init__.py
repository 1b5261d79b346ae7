"""Client, informers, work queue, leader election, events and metrics that run the controllers."""
