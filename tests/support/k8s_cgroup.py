"""Memory cgroups for the process kubelet's containers: flexjob's own (``platform.cgroups``).

Each container runs in its own memory cgroup under this process's own (v1 ``memory`` or v2
unified), so its limit is enforced by the kernel's OOM killer as on a node, and the kubelet
reads whether an OOM kill happened there (containerd reports such a container ``OOMKilled``).
``available()`` says whether cgroups can be made here (root, cgroupfs writable); without them
containers run unlimited and OOM tests skip. The local platform uses the same classes for its
replicas; this module only names them for the kubelet.
"""

from flexjob.platform.cgroups import CgroupRoot, MemoryCgroup

__all__ = ["CgroupRoot", "MemoryCgroup"]
