"""Tests of flexjob.core.operator."""
