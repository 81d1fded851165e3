"""The per-job training master process: wires the core pieces (shards, rendezvous, batch plan) to
the RPC server, stats and scaling.

Entry points: ``core.training.master_config.MasterConfig`` (``from_job`` or built by hand),
``master.main.start_master`` (in this process, returns a handle with ``address`` / ``stop()``),
``master.main.run_master`` (blocks; what ``flexjob master`` runs) and
``master.launch.spawn_master`` (a child process; waits for ``<job-dir>/master.addr``).
"""
