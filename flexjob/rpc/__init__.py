"""The wire protocols between flexjob processes: the master's typed protobuf messages over one
gRPC service (client and server glue), and the Brain's HTTP messages and typed client. Never
pickles.
"""
