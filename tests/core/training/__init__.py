"""Tests of flexjob.core.training."""
