"""Prints numbered lines for a while (each flushed): output for the progress line to scroll."""

import time

for i in range(40):
    print(f"line {i} of the trainer", flush=True)
    time.sleep(0.05)
