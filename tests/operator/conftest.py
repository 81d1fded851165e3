"""Fixtures for the Kubernetes operator tests: the emulator and a running kopf operator."""

from tests.operator.kopf_fixtures import operator, operator_with_image
from tests.support.k8s_fixtures import k8s_emulator, k8s_emulator_thread, platform_and_core

__all__ = [
    "k8s_emulator",
    "k8s_emulator_thread",
    "operator",
    "operator_with_image",
    "platform_and_core",
]
