"""flexjob: an elastic distributed deep-learning training orchestrator.

The package layers (see README): ``api`` (the job model) and ``core`` (the decisions) hold no I/O;
``rpc``, ``platform``, ``master``, ``agent``, ``trainer``, ``operator``, ``server``,
``scheduler``, ``brain`` and ``cli`` are the shells around them.
"""

__version__ = "0.1.0"
