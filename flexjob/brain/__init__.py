"""The Brain service: database schema, stats store, optimize processor and algorithm executor."""
