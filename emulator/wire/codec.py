"""Pulsar's frames, as Commands.java writes them and PulsarDecoder reads them.

A simple command: `[totalSize:4][commandSize:4][BaseCommand]`. A payload command (SEND, MESSAGE):
`[totalSize:4][commandSize:4][BaseCommand][magic 0x0e01:2][crc32c:4][metadataSize:4][MessageMetadata]
[payload]`, the CRC32C (Castagnoli) taken over everything after it (Commands.serializeCommandSendWithSize,
Commands.computeChecksum). Sizes are big-endian. What follows the command in a payload frame,
from the magic number on, is what the broker stores as the entry and hands back in MESSAGE
("headersAndPayload"), so a batch (num_messages_in_batch with SingleMessageMetadata per message)
round-trips untouched.

`FrameDecoder` cuts a byte stream into frames; a frame it cannot read raises `FrameError`, which the
connection answers with CommandError and a close (PulsarDecoder.channelRead: any decode exception
closes the channel).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import google_crc32c
from google.protobuf.message import DecodeError

from . import PulsarApi_pb2 as pb

__all__ = ["MAGIC", "MAX_FRAME_SIZE", "MAX_MESSAGE_SIZE", "Frame", "FrameDecoder", "FrameError",
           "checksum", "encode", "encode_payload", "payload_of", "split_entry"]

MAGIC = 0x0E01
MAX_MESSAGE_SIZE = 5 * 1024 * 1024
"""Commands.DEFAULT_MAX_MESSAGE_SIZE (maxMessageSize), sent in CONNECTED."""
MAX_FRAME_SIZE = MAX_MESSAGE_SIZE + 10 * 1024
"""Commands.MESSAGE_SIZE_FRAME_PADDING: a frame may carry the command and metadata on top."""

_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")


class FrameError(ValueError):
    """A frame that is not Pulsar's: the connection is closed after an error answer. `frames`: the
    good frames read before it in the same chunk, to be served first."""

    def __init__(self, message: str, frames: "list[Frame] | None" = None) -> None:
        super().__init__(message)
        self.frames = frames or []


@dataclass(frozen=True, slots=True)
class Frame:
    command: pb.BaseCommand
    entry: bytes | None = None
    """A payload command's headersAndPayload (from the magic number on), None for a simple one."""


def checksum(data: bytes) -> int:
    """CRC32C of `data` (Crc32cIntChecksum.computeChecksum)."""
    return int(google_crc32c.value(data))


def encode(cmd: pb.BaseCommand) -> bytes:
    """A simple command's frame (Commands.serializeWithSize)."""
    body = cmd.SerializeToString()
    return _U32.pack(len(body) + 4) + _U32.pack(len(body)) + body


def encode_payload(cmd: pb.BaseCommand, entry: bytes) -> bytes:
    """A payload command's frame: the command, then `entry` (magic, checksum, metadata, payload) as is."""
    body = cmd.SerializeToString()
    return _U32.pack(4 + len(body) + len(entry)) + _U32.pack(len(body)) + body + entry


def payload_of(metadata: pb.MessageMetadata, payload: bytes) -> bytes:
    """An entry (headersAndPayload) for `metadata` and `payload`, with its checksum."""
    meta = metadata.SerializeToString()
    rest = _U32.pack(len(meta)) + meta + payload
    return _U16.pack(MAGIC) + _U32.pack(checksum(rest)) + rest


def split_entry(entry: bytes) -> tuple[pb.MessageMetadata, bytes, bool]:
    """(metadata, payload, checksum ok) of an entry; `FrameError` if it is not one.

    An entry without the magic number has no checksum (protocol < v6, Commands.hasChecksum): it is
    read as `[metadataSize][metadata][payload]` and counts as verified."""
    ok = True
    pos = 0
    if len(entry) >= 2 and _U16.unpack_from(entry, 0)[0] == MAGIC:
        if len(entry) < 6:
            raise FrameError("payload frame cut inside its checksum")
        expected = _U32.unpack_from(entry, 2)[0]
        pos = 6
        ok = checksum(entry[pos:]) == expected
    if len(entry) < pos + 4:
        raise FrameError("payload frame without a metadata size")
    size = _U32.unpack_from(entry, pos)[0]
    start = pos + 4
    if size > len(entry) - start:
        raise FrameError(f"metadata size {size} exceeds the frame ({len(entry) - start} bytes left)")
    meta = pb.MessageMetadata()
    try:
        meta.ParseFromString(entry[start:start + size])
    except DecodeError as e:
        raise FrameError(f"bad MessageMetadata: {e}") from None
    return meta, entry[start + size:], ok


class FrameDecoder:
    """Cuts frames off a byte stream (LengthFieldBasedFrameDecoder(maxFrameSize, 0, 4, 0, 4))."""

    def __init__(self, max_frame_size: int = MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        self._buf += data
        frames: list[Frame] = []
        buf = self._buf
        while len(buf) >= 4:
            total = _U32.unpack_from(buf, 0)[0]
            if total > self.max_frame_size:
                raise FrameError(f"frame size {total} exceeds the maximum {self.max_frame_size}", frames)
            if len(buf) < 4 + total:
                break
            frame = bytes(buf[4:4 + total])
            del buf[:4 + total]
            try:
                frames.append(parse_frame(frame))
            except FrameError as e:
                e.frames = frames
                raise
        return frames


def parse_frame(frame: bytes) -> Frame:
    """One frame without its total-size prefix: `[commandSize][BaseCommand][entry?]`."""
    if len(frame) < 4:
        raise FrameError(f"frame of {len(frame)} bytes has no command size")
    size = _U32.unpack_from(frame, 0)[0]
    if size == 0 or size > len(frame) - 4:
        raise FrameError(f"command size {size} does not fit the frame ({len(frame) - 4} bytes)")
    cmd = pb.BaseCommand()
    try:
        cmd.ParseFromString(frame[4:4 + size])
    except DecodeError as e:
        raise FrameError(f"bad BaseCommand: {e}") from None
    rest = frame[4 + size:]
    return Frame(cmd, rest if rest else None)
