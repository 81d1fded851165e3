"""Alembic migrations of the Brain's schema, shipped in the package and run at brain start."""
