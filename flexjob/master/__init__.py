"""The per-job training master process: wires the core pieces (shards, rendezvous, batch plan) to
the RPC server, stats and scaling.
"""
