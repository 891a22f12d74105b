"""The codec against Pulsar's byte layout (Commands.java), written out by hand here."""

from __future__ import annotations

import struct

import pytest

from emulator.wire import PulsarApi_pb2 as pb
from emulator.wire.codec import (
    MAGIC,
    FrameDecoder,
    FrameError,
    checksum,
    encode,
    encode_payload,
    payload_of,
    split_entry,
)


def test_crc32c_is_castagnoli():
    # the standard check value of CRC-32C (RFC 3720), not zlib's CRC-32 (0xCBF43926)
    assert checksum(b"123456789") == 0xE3069283


def test_simple_command_layout():
    cmd = pb.BaseCommand(type=pb.BaseCommand.PING, ping=pb.CommandPing())
    body = cmd.SerializeToString()
    frame = encode(cmd)
    assert frame == struct.pack(">II", len(body) + 4, len(body)) + body


def _hand_made_send(meta: pb.MessageMetadata, payload: bytes, *, corrupt: bool = False) -> bytes:
    """[totalSize][commandSize][BaseCommand][0x0e01][crc32c][metadataSize][metadata][payload]."""
    cmd = pb.BaseCommand(type=pb.BaseCommand.SEND,
                         send=pb.CommandSend(producer_id=1, sequence_id=7, num_messages=1)).SerializeToString()
    m = meta.SerializeToString()
    rest = struct.pack(">I", len(m)) + m + payload
    crc = checksum(rest) ^ (1 if corrupt else 0)
    headers = struct.pack(">HI", MAGIC, crc) + rest
    return struct.pack(">II", 4 + len(cmd) + len(headers), len(cmd)) + cmd + headers


def test_payload_frame_round_trip_and_checksum():
    meta = pb.MessageMetadata(producer_name="p", sequence_id=7, publish_time=1)
    data = _hand_made_send(meta, b"hello")
    dec = FrameDecoder()
    assert dec.feed(data[:11]) == []          # cut anywhere: nothing until the frame is whole
    (frame,) = dec.feed(data[11:])
    assert frame.command.type == pb.BaseCommand.SEND and frame.command.send.sequence_id == 7
    got, payload, ok = split_entry(frame.entry)
    assert ok and payload == b"hello" and got.producer_name == "p"
    assert payload_of(meta, b"hello") == frame.entry     # our writer makes the same bytes
    # MESSAGE carries the stored entry unchanged
    msg = encode_payload(pb.BaseCommand(type=pb.BaseCommand.MESSAGE, message=pb.CommandMessage(
        consumer_id=1, message_id=pb.MessageIdData(ledgerId=1, entryId=0))), frame.entry)
    assert msg.endswith(frame.entry)
    (bad,) = FrameDecoder().feed(_hand_made_send(meta, b"hello", corrupt=True))
    assert split_entry(bad.entry)[2] is False


def test_batch_metadata_survives():
    meta = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, num_messages_in_batch=3)
    singles = b"".join(
        struct.pack(">I", len(s := pb.SingleMessageMetadata(payload_size=1).SerializeToString())) + s + b"x"
        for _ in range(3))
    got, payload, ok = split_entry(payload_of(meta, singles))
    assert ok and got.num_messages_in_batch == 3 and payload == singles


@pytest.mark.parametrize("data, why", [
    (struct.pack(">I", 100 * 1024 * 1024), "exceeds the maximum"),
    (struct.pack(">II", 5, 9) + b"x", "does not fit"),
    (struct.pack(">II", 6, 2) + b"\xff\xff", "bad BaseCommand"),
])
def test_malformed_frames(data, why):
    with pytest.raises(FrameError, match=why):
        FrameDecoder().feed(data)
