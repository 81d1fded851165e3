"""The operator on Kubernetes: kopf handlers (``handlers``), admission webhooks (``admission``)
and the process that runs them (``runner``). Not for the reconcile decisions (``core``)."""
