"""The operator's rules: from a job and what runs for it to the actions to take (reconcile, replica
plans and rendering, phases, status patches, the implicit job master)."""
