"""Kubernetes resource quantities (``500m``, ``0.2``, ``1024Mi``, ``2Gi``) parsed with the
kubernetes client's own parser, so flexjob accepts exactly what Kubernetes accepts.

Not for converting between units of the job model (``ResourceSpec`` holds cores and MiB).
"""

from decimal import Decimal, InvalidOperation

_MIB = Decimal(1024 * 1024)


def parse_quantity(value: str | int | float) -> Decimal:
    """The quantity as a number (cores, bytes, count). Raises ``ValueError`` when it is not a
    Kubernetes quantity or is negative."""
    from kubernetes.utils.quantity import parse_quantity as k8s_parse  # heavy import: lazy

    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{value!r} is not a quantity")
    try:
        number: Decimal = k8s_parse(value)  # type: ignore[no-untyped-call]
    except (ValueError, InvalidOperation, TypeError) as exc:
        raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 500m, 2, 1024Mi)") from exc
    if number < 0:
        raise ValueError(f"{value!r} is negative")
    return number


def cpu_cores(value: str | int | float) -> float:
    return float(parse_quantity(value))


def memory_mib(value: str | int | float) -> int:
    return int(parse_quantity(value) / _MIB)
