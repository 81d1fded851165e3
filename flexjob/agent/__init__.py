"""The elastic agent that runs in every replica: launches and supervises training processes,
samples resources and talks to the master.
"""
