"""The operator on this machine: the in-process reconcile loop (``loop``) and the way
``flexjob submit`` / ``run`` start and stop it (``runner``)."""
