"""Drivers of core.operator.reconcile: the in-process loop for the local platform and kopf handlers
plus admission webhooks for Kubernetes.
"""
