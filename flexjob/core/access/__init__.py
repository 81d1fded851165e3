"""Who may reach what: constant-time secret comparison and whether a listen address is local to
this machine."""
