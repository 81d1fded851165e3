"""Tests of flexjob.core.planner."""
