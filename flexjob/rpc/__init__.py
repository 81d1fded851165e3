"""The master's wire protocol: typed protobuf messages over one gRPC service, plus client and
server glue. Never pickles.
"""
