"""Tests of flexjob.core.ps."""
