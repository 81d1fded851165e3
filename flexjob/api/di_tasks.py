"""DI Orchestrator v2 tasks of one replica type: which task a replica belongs to, and the rules
a spec with several of them keeps.

A DIJob v2 may list several tasks of the same type (two collector tasks, each with its own
name, replicas and template). They become one ``ReplicaSpec`` whose ``tasks`` hold them in spec
order: the type's replicas are the first task's, then the second's, ... (replica ``i`` of the
type belongs to the task whose run holds ``i``; replicas a scale-up adds beyond them belong to
the last task). Each replica runs from its task's template and carries its task's name (the
label ``api.names.LABEL_TASK_NAME``, the variable ``api.names.ENV_TASK_NAME``, the server's
replies). A type with one task keeps its name in ``ReplicaSpec.name`` and no ``tasks``.

Not for: reading the DIJob (``api.readers.dijob``), rendering (``core.operator.replica_plan``).
"""

from flexjob.api.job import ElasticJob, ReplicaSpec, TaskSlice
from flexjob.api.name_rules import name_problem
from flexjob.api.pod import PodTemplateSpec
from flexjob.api.problems import Problem


def task_at(spec: ReplicaSpec, index: int) -> TaskSlice | None:
    """The task replica ``index`` of ``spec``'s type belongs to; None without ``tasks``."""
    if not spec.tasks:
        return None
    start = 0
    for task in spec.tasks:
        start += task.replicas
        if index < start:
            return task
    return spec.tasks[-1]


def task_name(spec: ReplicaSpec, index: int) -> str | None:
    """The name of the task replica ``index`` belongs to (a one-task type: ``spec.name``)."""
    task = task_at(spec, index)
    return task.name if task is not None else spec.name


def task_template(spec: ReplicaSpec, index: int) -> PodTemplateSpec:
    """What replica ``index`` runs: its task's template, else the type's."""
    task = task_at(spec, index)
    return task.template if task is not None else spec.template


def task_problems(job: ElasticJob) -> list[Problem]:
    """A type's ``tasks`` must add up to its ``replicas``; task names are DNS labels, one task
    per name in the job (each names its replicas)."""
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for rtype, spec in job.spec.replica_specs.items():
        path = f"spec.replicaSpecs.{rtype}"
        named = [(f"{path}.name", spec.name)] if spec.name and not spec.tasks else []
        named += [(f"{path}.tasks[{k}].name", t.name) for k, t in enumerate(spec.tasks or [])]
        for where, name in named:
            problem = name_problem(name)
            if problem is not None:
                problems.append(Problem(where, name, problem))
            elif name in seen:
                problems.append(
                    Problem(where, name, f"a second task named {name!r} ({seen[name]})")
                )
            seen.setdefault(name, where)
        total = sum(t.replicas for t in spec.tasks or [])
        if spec.tasks and spec.replicas is not None and spec.replicas != total:
            message = f"{spec.replicas} is not the sum of {path}.tasks[*].replicas ({total})"
            problems.append(Problem(f"{path}.replicas", spec.replicas, message))
    return problems
