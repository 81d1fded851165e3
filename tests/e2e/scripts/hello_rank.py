"""Prints one line with its rank and exits (no collective: the fastest whole job)."""

import os

print(f"hello from rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']}", flush=True)
