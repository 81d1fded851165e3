"""The decisions as plain code, one sub-package per tenant. No I/O; time and randomness are
injected.

- ``operator``: a job and what runs for it → the actions to take (reconcile, replica plans and
  rendering, phases, status patches, the implicit job master);
- ``training``: the rules of a running job and its master (settings, datasets and shards,
  rendezvous, the batch plan, leases, slow nodes, flash checkpoints, devices, the goodput model);
- ``ps``: the parameter server's partitions, optimizers and PS-set changes;
- ``planner``: job stats → a resource plan (the Brain's and the master's optimizer);
- ``allocator``: the allocator's policies over a cluster (the ``Policy`` contract, the built-ins);
- ``access``: constant-time secret comparison, whether a listen address is local.

Shared by several tenants, at the top: ``clock`` (injected time), ``fields`` (building one
object from another's fields) and ``replicas`` (what the operator asks a platform to create and
what it observes back, which the master's node watch reads too).
"""
