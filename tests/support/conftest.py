"""Fixtures for the emulator's own tests."""

from tests.support.k8s_fixtures import k8s_client, k8s_emulator, kubelet

__all__ = ["k8s_client", "k8s_emulator", "kubelet"]
