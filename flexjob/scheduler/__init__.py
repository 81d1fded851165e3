"""The Allocator that runs core.allocator over a cluster model, and the discrete-time cluster
simulator.

``DEFAULT_POLICY`` is the one place the Allocator's (and ``flexjob simulate``'s) default policy
is named: the policy that won on the held-out workloads of ``benchmarks/scheduler.py``, by the
rule in ``docs/allocator.md``. Kept here, not in ``registry``, so the CLI names it without
importing the policies.
"""

DEFAULT_POLICY = "goodput"
