"""The Allocator that runs core.policies over a cluster model, and the discrete-time cluster
simulator.
"""
