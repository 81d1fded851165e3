"""The HTTP API to list, add and remove replicas of a job and to post profiling data."""
