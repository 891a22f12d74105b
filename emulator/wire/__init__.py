"""Pulsar's binary protocol served by the emulated brokers, for real clients (`--pulsar-port`).

`codec` frames commands as Pulsar's Commands.java does; `connection` is ServerCnx for one TCP
connection (and a client actor of the cluster); `server` holds the per-broker listeners, the topics'
logs (`topic_log`) and the measured rates (`meter`) the brokers' stats include.

`PulsarApi_pb2.py` is generated from the trimmed `PulsarApi.proto` beside it; regenerate with
(grpcio-tools):

    cd emulator/wire && python3 -m grpc_tools.protoc -I. --python_out=. PulsarApi.proto
"""
