"""The decisions as plain code: reconcile, shard manager, rendezvous, batch plan, allocation
policies, resource planner. No I/O; time and randomness are injected.
"""
