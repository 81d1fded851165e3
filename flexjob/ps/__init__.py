"""``flexjob ps``: the parameter-server replica process — a thin shell around ``core.ps``.

``service`` serves one partition (locks, request counters, process stats); ``main`` runs the
gRPC server and registers the replica's address with the job master. Decisions (partitioning,
optimizers, lazy rows) live in ``flexjob.core.ps``.
"""
