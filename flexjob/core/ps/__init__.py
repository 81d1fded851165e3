"""Parameter-server decisions as plain code: which PS owns what, how rows start, how
gradients update them. No I/O; the ``flexjob.ps`` shell serves what these functions decide."""
