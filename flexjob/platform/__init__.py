"""Where jobs and replicas live: the Platform protocol (contract.py) with a local (processes +
SQLite) and a Kubernetes implementation.
"""
