"""The flexjob command line."""
