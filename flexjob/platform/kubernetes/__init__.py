"""The Kubernetes platform: ElasticJobs and ScalePlans as custom objects, replicas as pods.

``KubernetesPlatform`` implements ``flexjob.platform.contract.Platform``; ``bodies`` builds and
reads the Kubernetes objects. Importing this package needs the ``kubernetes`` client, nothing else.
"""

from flexjob.platform.kubernetes.platform import KubernetesPlatform

__all__ = ["KubernetesPlatform"]
