"""Seeing a job: Prometheus metrics (one registry per process, one ``/metrics`` endpoint) and
the job's timeline (a time series and events in the job directory, shown as text or a plot).

Used by the master, agent, operator and brain. Not for deciding anything.
"""
