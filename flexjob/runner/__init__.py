"""``flexjob run``'s runner: one job on this machine — its master, parameter servers and
agents as child processes, the progress line, stop signals and the exit summary.

``runner.config.RunConfig`` holds the run's master settings and its agent template whole
(plus what only a run has); ``runner.launcher.run_job`` runs it. Uses ``master`` and
``agent``; not for Kubernetes (the operator).
"""
