"""The Brain's database: schema (``models``), engines and migrations (``engine``)."""
