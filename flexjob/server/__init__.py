"""The flexjob HTTP server: change a job's size, report profilings, list replicas.

``create_app(platform, token)`` builds the FastAPI app (``app``); routes live in ``v2alpha1``
(DI Orchestrator v2, by job id) and ``v1alpha2`` (DI Orchestrator v1, by coordinator). The
server writes only ``status.replicas`` / ``status.profilings``; the operator acts on them.
"""
