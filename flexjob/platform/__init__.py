"""Where jobs and replicas live: the Platform protocol (api.py) with a local (processes + SQLite)
and a Kubernetes implementation.
"""
