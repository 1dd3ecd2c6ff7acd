#!/usr/bin/env python3
"""Generates riegeli-rs's golden test data with Google's C++ Riegeli.

Usage: python testdata/generate.py OUTDIR   (normally `cargo xtask testdata`)

The C++ writer is reached through the `array_record` package from PyPI
(array-record 0.8.6, which bundles the C++ Riegeli it is built on). Everything
else here is the Python standard library: the record sets are generated from a
seeded `random.Random`, and an independent walker (with its own HighwayHash)
parses every file the C++ writer produced, so the manifest states what the
bytes are, not what a Rust reader thinks they are.

Output, relative to OUTDIR (the directories below are replaced, other files are
left alone):
  records/<set>.delimited        each record set as varint(len) + bytes per record
  array_record/<name>.array_record   the C++ ArrayRecordWriter's output
  valid/<name>.riegeli           the plain Riegeli/records cut of each (the
                                 ArrayRecord file up to its footer chunk)
  corrupt/<name>.riegeli         damaged copies of valid files
  MANIFEST.json                  per file: options, record set, chunks, damage
  README.md                      provenance and per-file description
  SHA256SUMS                     `sha256sum` format, every file but itself

The output is deterministic: running the script twice gives identical files.
"""

import hashlib
import json
import os
import random
import shutil
import struct
import sys

from array_record.python import array_record_module

ORACLE = "array-record 0.8.6"

# --------------------------------------------------------------------------
# Format constants and position math (riegeli-records-format.txt,
# "Implementation notes").

BLOCK_SIZE = 1 << 16
BLOCK_HEADER_SIZE = 24
USABLE_BLOCK_SIZE = BLOCK_SIZE - BLOCK_HEADER_SIZE
CHUNK_HEADER_SIZE = 40

FILE_START = bytes.fromhex(
    "83af70d10d884a3f" "0000000000000000" "4000000000000000"
    "91bac23c9287e1a9" "0000000000000000" "e19f13c0e9b1c372"
    "7300000000000000" "0000000000000000")

POSTSCRIPT_MAGIC = 0x71930E704FDAE05E


def remaining_in_block(pos):
    return (-pos) % BLOCK_SIZE


def is_possible_chunk_boundary(pos):
    return remaining_in_block(pos) < USABLE_BLOCK_SIZE


def add_with_overhead(pos, size):
    blocks = (size + (pos + USABLE_BLOCK_SIZE - 1) % BLOCK_SIZE) // USABLE_BLOCK_SIZE
    return pos + size + blocks * BLOCK_HEADER_SIZE


def round_up_to_possible_chunk_boundary(pos):
    return pos + max(0, remaining_in_block(pos) - (USABLE_BLOCK_SIZE - 1))


def chunk_end(begin, data_size, num_records):
    return max(add_with_overhead(begin, CHUNK_HEADER_SIZE + data_size),
               round_up_to_possible_chunk_boundary(begin + num_records))


# --------------------------------------------------------------------------
# HighwayHash-64 (portable reference algorithm) with Riegeli's key.

M64 = (1 << 64) - 1
M32 = (1 << 32) - 1
_HH_INIT0 = (0xDBE6D5D5FE4CCE2F, 0xA4093822299F31D0, 0x13198A2E03707344, 0x243F6A8885A308D3)
_HH_INIT1 = (0x3BD39E10CB0EF593, 0xC0ACF169B5F18A8C, 0xBE5466CF34E90C6C, 0x452821E638D01377)
_HH_KEY = (0x2F696C6567656952, 0x0A7364726F636572, 0x2F696C6567656952, 0x0A7364726F636572)
_LANES = struct.Struct("<4Q")


def _zipper_merge(v1, v0):
    add0 = ((((v0 & 0xFF000000) | (v1 & 0xFF00000000)) >> 24)
            | (((v0 & 0xFF0000000000) | (v1 & 0xFF000000000000)) >> 16)
            | (v0 & 0xFF0000) | ((v0 & 0xFF00) << 32)
            | ((v1 & 0xFF00000000000000) >> 8) | (v0 << 56)) & M64
    add1 = ((((v1 & 0xFF000000) | (v0 & 0xFF00000000)) >> 24)
            | (v1 & 0xFF0000) | ((v1 & 0xFF0000000000) >> 16)
            | ((v1 & 0xFF00) << 24) | ((v0 & 0xFF000000000000) >> 8)
            | ((v1 & 0xFF) << 48) | (v0 & 0xFF00000000000000)) & M64
    return add1, add0


def _hh_update(st, lanes):
    v0, v1, mul0, mul1 = st
    for i in range(4):
        v1[i] = (v1[i] + mul0[i] + lanes[i]) & M64
        mul0[i] ^= (v1[i] & M32) * (v0[i] >> 32)
        v0[i] = (v0[i] + mul1[i]) & M64
        mul1[i] ^= (v0[i] & M32) * (v1[i] >> 32)
    for hi, lo, dst in ((1, 0, v0), (3, 2, v0)):
        a1, a0 = _zipper_merge(v1[hi], v1[lo])
        dst[hi] = (dst[hi] + a1) & M64
        dst[lo] = (dst[lo] + a0) & M64
    for hi, lo, dst in ((1, 0, v1), (3, 2, v1)):
        a1, a0 = _zipper_merge(v0[hi], v0[lo])
        dst[hi] = (dst[hi] + a1) & M64
        dst[lo] = (dst[lo] + a0) & M64


def _rot32_halves(x, count):
    lo, hi = x & M32, x >> 32
    lo = ((lo << count) | (lo >> (32 - count))) & M32
    hi = ((hi << count) | (hi >> (32 - count))) & M32
    return lo | (hi << 32)


def highway_hash(data):
    """HighwayHash-64 of `data` with the Riegeli key."""
    data = bytes(data)
    v0 = [_HH_INIT0[i] ^ _HH_KEY[i] for i in range(4)]
    v1 = [_HH_INIT1[i] ^ (((_HH_KEY[i] >> 32) | (_HH_KEY[i] << 32)) & M64) for i in range(4)]
    st = (v0, v1, list(_HH_INIT0), list(_HH_INIT1))
    full = len(data) - len(data) % 32
    for off in range(0, full, 32):
        _hh_update(st, _LANES.unpack_from(data, off))
    size_mod32 = len(data) % 32
    if size_mod32:
        rem = data[full:]
        size_mod4 = size_mod32 & 3
        whole = size_mod32 & ~3
        packet = bytearray(32)
        for i in range(4):
            v0[i] = (v0[i] + (size_mod32 << 32) + size_mod32) & M64
            v1[i] = _rot32_halves(v1[i], size_mod32)
        packet[:whole] = rem[:whole]
        if size_mod32 & 16:
            packet[28:32] = rem[whole + size_mod4 - 4:whole + size_mod4]
        elif size_mod4:
            packet[16] = rem[whole]
            packet[17] = rem[whole + (size_mod4 >> 1)]
            packet[18] = rem[whole + size_mod4 - 1]
        _hh_update(st, _LANES.unpack(bytes(packet)))
    for _ in range(4):
        _hh_update(st, [((v0[j] >> 32) | (v0[j] << 32)) & M64 for j in (2, 3, 0, 1)])
    return (v0[0] + v1[0] + st[2][0] + st[3][0]) & M64


assert highway_hash(b"") == 0x72C3B1E9C0139FE1
assert highway_hash(FILE_START[8:24]) == 0x3F4A880DD170AF83
assert highway_hash(FILE_START[32:64]) == 0xA9E187923CC2BA91


# --------------------------------------------------------------------------
# Independent walker.

class WalkError(Exception):
    """A strict walk stopped. Fields mirror riegeli-framing's error kinds."""

    def __init__(self, kind, what, position, **extra):
        super().__init__(f"{kind} ({what}) at {position}")
        self.kind, self.what, self.position, self.extra = kind, what, position, extra

    def as_json(self):
        out = {"kind": self.kind, "what": self.what, "position": self.position}
        out.update(self.extra)
        return out


def read_block_header(data, block_begin):
    """(ok, previous_chunk, next_chunk) of the block header at block_begin."""
    raw = data[block_begin:block_begin + BLOCK_HEADER_SIZE]
    stored, prev, nxt = struct.unpack("<3Q", raw)
    return stored == highway_hash(raw[8:]), prev, nxt


def logical_bytes(data, begin, length):
    """`length` bytes of chunk content from physical position `begin`, skipping block headers."""
    out = bytearray()
    pos = begin
    while len(out) < length:
        if pos % BLOCK_SIZE == 0:
            pos += BLOCK_HEADER_SIZE
        take = min(remaining_in_block(pos), length - len(out))
        out += data[pos:pos + take]
        pos += take
    return bytes(out)


def parse_header_fields(raw):
    stored, data_size, data_hash, type_and_count, decoded = struct.unpack("<5Q", raw)
    return {
        "stored_hash": stored, "computed_hash": highway_hash(raw[8:]),
        "data_size": data_size, "data_hash": data_hash,
        "chunk_type": type_and_count & 0xFF, "num_records": type_and_count >> 8,
        "decoded_data_size": decoded,
    }


def check_block_header(data, chunk_begin, block_begin, end):
    """Checks a block header inside a chunk. Returns False for a header whose
    hash fails: the spec says such a header "must be ignored", and
    riegeli-framing ignores it (the chunk's own hashes still protect it)."""
    ok, prev, nxt = read_block_header(data, block_begin)
    if not ok:
        return False
    if not (prev % BLOCK_SIZE < USABLE_BLOCK_SIZE and nxt > 0
            and (nxt - 1) % BLOCK_SIZE >= BLOCK_HEADER_SIZE):
        raise WalkError("invalid_block_header", "block header", block_begin)
    if prev != block_begin - chunk_begin:
        raise WalkError("block_header_mismatch", "previous_chunk", block_begin,
                        expected=block_begin - chunk_begin, found=prev)
    if end is not None and nxt != end - block_begin:
        raise WalkError("block_header_mismatch", "next_chunk", block_begin,
                        expected=end - block_begin, found=nxt)
    return True


def strict_chunk(data, begin):
    """Parses the chunk at `begin` the way riegeli_framing::parse_chunk followed by
    ChunkView::verify_data_hash does, in the same order of checks. Returns the
    chunk entry, its data and the positions of ignored (damaged) block headers."""
    if not is_possible_chunk_boundary(begin):
        raise WalkError("invalid_chunk_boundary", "chunk", begin)
    header_end = add_with_overhead(begin, CHUNK_HEADER_SIZE)
    if len(data) < header_end:
        raise WalkError("incomplete", "chunk header", begin,
                        needed=header_end - begin, have=len(data) - begin)
    for block in range(begin + remaining_in_block(begin), header_end, BLOCK_SIZE):
        check_block_header(data, begin, block, None)
    h = parse_header_fields(logical_bytes(data, begin, CHUNK_HEADER_SIZE))
    if h["stored_hash"] != h["computed_hash"]:
        raise WalkError("hash_mismatch", "chunk header", begin)
    end = chunk_end(begin, h["data_size"], h["num_records"])
    if len(data) < end:
        raise WalkError("incomplete", "chunk", begin, needed=end - begin, have=len(data) - begin)
    damaged = [block for block in range(begin + remaining_in_block(begin), end, BLOCK_SIZE)
               if not check_block_header(data, begin, block, end)]
    payload = logical_bytes(data, header_end, h["data_size"])
    if highway_hash(payload) != h["data_hash"]:
        raise WalkError("hash_mismatch", "chunk data", begin)
    return chunk_entry(begin, h, end), payload, damaged


def chunk_entry(begin, h, end):
    return {
        "offset": begin, "chunk_type": chr(h["chunk_type"]), "data_size": h["data_size"],
        "num_records": h["num_records"], "decoded_data_size": h["decoded_data_size"],
        "chunk_end": end,
    }


def walk(data, start=0, stop=None):
    """Walks chunks from `start` until `stop` (default: end of data).

    Returns (chunks, payloads, error, damaged): the chunks read in full with
    their header and data hashes verified, the WalkError that stopped the walk
    early (or None), and the positions of damaged block headers that were
    ignored inside the chunks read."""
    stop = len(data) if stop is None else stop
    chunks, payloads, damaged, pos = [], [], [], start
    while pos < stop:
        try:
            entry, payload, bad = strict_chunk(data, pos)
        except WalkError as err:
            return chunks, payloads, err, damaged
        chunks.append(entry)
        payloads.append(payload)
        damaged += bad
        pos = entry["chunk_end"]
    if pos != stop:
        raise AssertionError(f"walk overshot: {pos} != {stop}")
    return chunks, payloads, None, damaged


def skipping_reader(data, ignore_damaged_block_headers):
    """Simulates C++ DefaultChunkReader reading sequentially and calling
    Recover() after every failure (riegeli/records/chunk_reader.cc: ReadChunk,
    ReadChunkHeader, ReadBlockHeader, Recover).

    With `ignore_damaged_block_headers`, a block header inside a chunk whose
    hash fails is ignored while that chunk is read, as the spec says and as
    riegeli-framing does; C++ instead fails the chunk and searches from the
    next block boundary. Everything else follows C++.

    Returns the begin positions of the chunks read successfully (every hash
    verified), in order."""
    size = len(data)

    class Failure(Exception):
        # how: "have_chunk" (resume at `at`), "find_chunk" (resume where the
        # first valid block header at or after `at` points), "truncated" (stop).
        def __init__(self, how, at):
            super().__init__(how)
            self.how, self.at = how, at

    def block_header(block_begin, chunk_begin):
        """ReadBlockHeader plus the previous_chunk check; returns next_chunk,
        or None for an ignored damaged header."""
        if block_begin + BLOCK_HEADER_SIZE > size:
            raise Failure("truncated", size)
        ok, prev, nxt = read_block_header(data, block_begin)
        if not ok:
            if ignore_damaged_block_headers:
                return None
            raise Failure("find_chunk", block_begin + BLOCK_HEADER_SIZE)
        if prev != block_begin - chunk_begin:
            if nxt <= BLOCK_SIZE:
                raise Failure("have_chunk", block_begin + nxt)
            raise Failure("find_chunk", block_begin + BLOCK_HEADER_SIZE)
        return nxt

    def read_chunk(begin):
        """Returns the chunk's end, or raises Failure."""
        header_end = add_with_overhead(begin, CHUNK_HEADER_SIZE)
        boundary = begin + remaining_in_block(begin)
        split_next = block_header(boundary, begin) if boundary < header_end else None
        if header_end > size:
            raise Failure("truncated", size)
        h = parse_header_fields(logical_bytes(data, begin, CHUNK_HEADER_SIZE))
        if h["stored_hash"] != h["computed_hash"]:
            raise Failure("find_chunk", header_end)
        end = chunk_end(begin, h["data_size"], h["num_records"])
        if split_next not in (None, end - boundary):
            raise Failure("find_chunk", header_end)
        data_end = add_with_overhead(header_end, h["data_size"])
        for block in range(header_end + remaining_in_block(header_end), data_end, BLOCK_SIZE):
            if block_header(block, begin) not in (None, end - block):
                raise Failure("find_chunk", block + BLOCK_HEADER_SIZE)
        if data_end > size or end > size:
            raise Failure("truncated", size)
        if highway_hash(logical_bytes(data, header_end, h["data_size"])) != h["data_hash"]:
            raise Failure("have_chunk", end)
        return end

    def find_chunk(pos):
        """Recover()'s find_chunk loop; returns where reading resumes."""
        while True:
            pos += remaining_in_block(pos)
            if pos + BLOCK_HEADER_SIZE > size:
                return size
            ok, prev, nxt = read_block_header(data, pos)
            if not ok:
                pos += BLOCK_HEADER_SIZE
                continue
            if prev == 0:
                return pos
            pos += nxt
            if is_possible_chunk_boundary(pos):
                return pos

    good, pos = [], 0
    while pos < size:
        try:
            end = read_chunk(pos)
        except Failure as failure:
            if failure.how == "truncated":
                break
            if failure.how == "have_chunk" and is_possible_chunk_boundary(failure.at):
                pos = failure.at
            else:
                pos = find_chunk(failure.at)
            continue
        good.append(pos)
        pos = end
    return good


# --------------------------------------------------------------------------
# Protobuf wire format, by hand.

def varint(n):
    n &= M64
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_varint(buf, pos):
    shift = result = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def tag(field, wire_type):
    return varint(field << 3 | wire_type)


def f_varint(field, value):
    return tag(field, 0) + varint(value)


def f_fixed64(field, value):
    return tag(field, 1) + struct.pack("<Q", value & M64)


def f_fixed32(field, value):
    return tag(field, 5) + struct.pack("<I", value & M32)


def f_bytes(field, value):
    return tag(field, 2) + varint(len(value)) + value


def f_group(field, body):
    return tag(field, 3) + body + tag(field, 4)


def zigzag(n):
    return (n << 1) ^ (n >> 63)


def delimited(records):
    return b"".join(varint(len(r)) + r for r in records)


# --------------------------------------------------------------------------
# Record sets.

WORDS = (
    "the of and to in is you that it he was for on are as with his they at be this have from or "
    "one had by word but not what all were we when your can said there use an each which she do how "
    "their if will up other about out many then them these so some her would make like him into time "
    "has look two more write go see number no way could people my than first water been call who oil "
    "its now find long down day did get come made may part riegeli record chunk block header hash "
    "transposed snappy brotli zstd varint buffer stream offset boundary padding footer postscript"
).split()


def words_records(rng, count):
    """Lines of words (text-like, compressible), some empty."""
    records = []
    for _ in range(count):
        n = rng.choice((0, 1, 3, 6, 10, 16, 16, 20, 24, 30, 40, 60))
        line = " ".join(rng.choice(WORDS) for _ in range(n))
        if rng.random() < 0.2:
            line = line.capitalize() + "."
        records.append(line.encode())
    return records


def random_words(rng, lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi))).encode()


def proto_leaf(rng):
    """A submessage three levels deep at most: Leaf { a: varint, b: fixed32 }."""
    out = b""
    if rng.random() < 0.8:
        out += f_varint(1, rng.getrandbits(rng.choice((3, 7, 14, 30, 63))))
    if rng.random() < 0.5:
        out += f_fixed32(2, rng.getrandbits(32))
    return out


def proto_inner(rng):
    """Inner { id: varint, name: string, leaf: Leaf, repeated tags: string }."""
    out = f_varint(1, rng.randrange(1000))
    if rng.random() < 0.7:
        out += f_bytes(2, random_words(rng, 1, 3))
    if rng.random() < 0.6:
        out += f_bytes(3, proto_leaf(rng))
    for _ in range(rng.choice((0, 0, 1, 2))):
        out += f_bytes(4, rng.choice(WORDS).encode())
    return out


def proto_message(rng):
    """A record shaped like a proto message with every wire type."""
    out = b""
    if rng.random() < 0.9:  # uint64 of varied width
        out += f_varint(1, rng.getrandbits(rng.choice((1, 7, 8, 14, 21, 35, 64))))
    if rng.random() < 0.5:  # negative int64: ten-byte varint
        out += f_varint(2, -rng.randrange(1, 1 << 40))
    if rng.random() < 0.5:
        out += f_fixed32(3, rng.getrandbits(32))
    if rng.random() < 0.5:
        out += f_fixed64(4, rng.getrandbits(64))
    if rng.random() < 0.3:  # a double
        out += tag(5, 1) + struct.pack("<d", rng.uniform(-1e6, 1e6))
    if rng.random() < 0.8:
        out += f_bytes(6, random_words(rng, 0, 12))
    if rng.random() < 0.3:  # bytes that rarely parse as a message
        out += f_bytes(7, bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 24))))
    for _ in range(rng.choice((0, 1, 1, 2, 3))):  # repeated submessage, nested 3 deep
        out += f_bytes(8, proto_inner(rng))
    if rng.random() < 0.5:  # packed repeated varints
        packed = b"".join(varint(rng.getrandbits(rng.choice((4, 10, 20)))) for _ in range(rng.randrange(0, 12)))
        out += f_bytes(9, packed)
    if rng.random() < 0.3:  # a group (wire types 3 and 4)
        body = f_varint(1, rng.randrange(100))
        if rng.random() < 0.5:
            body += f_bytes(2, random_words(rng, 1, 2))
        out += f_group(10, body)
    if rng.random() < 0.4:  # sint64, zigzag
        out += f_varint(11, zigzag(rng.randrange(-(1 << 40), 1 << 40)))
    if rng.random() < 0.2:  # a bool
        out += f_varint(12, rng.randrange(2))
    if rng.random() < 0.05:  # large field numbers
        out += f_varint(1000, rng.randrange(1 << 20))
    if rng.random() < 0.03:
        out += f_fixed32((1 << 29) - 1, rng.getrandbits(32))
    if rng.random() < 0.1:  # a field out of order
        out += f_varint(1, rng.randrange(50))
    return out


def not_a_proto(rng):
    """Records that are not valid protobuf messages."""
    kind = rng.randrange(6)
    if kind == 0:  # random bytes
        return bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 40)))
    if kind == 1:  # a message cut in the middle of a field
        message = proto_message(rng) + f_bytes(6, b"truncated string")
        return message[:len(message) - rng.randrange(1, 8)]
    if kind == 2:  # wire type 7 does not exist
        return bytes([0x0F]) + bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 10)))
    if kind == 3:  # an end-group with no start-group
        return f_varint(1, 5) + tag(10, 4)
    if kind == 4:  # field number 0
        return bytes([0x02, 0x03]) + b"abc"
    return random_words(rng, 1, 6)  # plain text


def proto_records(rng, count):
    records = []
    for i in range(count):
        roll = rng.random()
        if roll < 0.04:
            records.append(b"")
        elif roll < 0.12:
            records.append(not_a_proto(rng))
        else:
            records.append(proto_message(rng))
    return records


def filler(rng, length):
    """A record of `length` pseudo-random bytes (incompressible)."""
    return rng.randbytes(length)


def simple_uncompressed_chunk_data_size(length):
    # compression_type, varint(len(sizes)), sizes = varint(length), the record.
    return 1 + 1 + len(varint(length)) + length


def sized_to_end_at(begin, target):
    """The record length whose group_size:1 uncompressed chunk at `begin` ends at `target`."""
    guess = target - begin - CHUNK_HEADER_SIZE
    for length in range(max(0, guess - 16 * BLOCK_HEADER_SIZE), guess + 1):
        if chunk_end(begin, simple_uncompressed_chunk_data_size(length), 1) == target:
            return length
    raise AssertionError(f"no record makes a chunk from {begin} end at {target}")


def boundary_records(rng):
    """Records for a group_size:1 uncompressed file whose chunks begin 1 and
    40 bytes before block boundaries (a chunk header split by a block header
    after its first byte, and one ending exactly at a boundary), with empty
    records around them."""
    records = [b"", b"", f_varint(1, 150), b"", random_words(rng, 3, 6)]
    pos = 64
    for record in records:
        pos = chunk_end(pos, simple_uncompressed_chunk_data_size(len(record)), 1)
    for k in (1, 40):
        target = (pos // BLOCK_SIZE + 1) * BLOCK_SIZE - k
        if target - pos < 200:
            target += BLOCK_SIZE
        record = filler(rng, sized_to_end_at(pos, target))
        records.append(record)
        pos = target
        # A small record whose chunk begins at `target` and crosses the boundary.
        small = random_words(rng, 4, 8)
        records.append(small)
        pos = chunk_end(pos, simple_uncompressed_chunk_data_size(len(small)), 1)
    records += [b"", proto_message(rng), b""]
    return records


def large_records(rng):
    """A text record over 200 KiB among small and empty ones. The big record
    repeats 10 KiB of text with numbered variations, so that it compresses well
    (and keeps the files small) while still needing more than one block."""
    base = b"\n".join(words_records(rng, 120))
    big = b""
    while len(big) <= 200 * 1024:
        big += base + b" #%d\n" % (len(big) // len(base))
    assert len(big) > 200 * 1024, len(big)
    return [b"", b"small", big, b"", random_words(rng, 2, 5), big[:20000]]


def build_record_sets():
    rng = random.Random(20240607)
    return {
        "words": words_records(rng, 1500),
        "protos": proto_records(rng, 700),
        "boundaries": boundary_records(rng),
        "large": large_records(rng),
        "small": [random_words(rng, 1, 4) for _ in range(5)],
        "empty": [],
    }


# --------------------------------------------------------------------------
# Files written by the C++ writer.

# name -> (record set, writer options, what it covers)
ARRAY_RECORD_FILES = [
    ("simple_none", "words", "group_size:50,uncompressed",
     "simple chunks ('r'), uncompressed; chunks straddle block boundaries"),
    ("simple_brotli", "words", "group_size:50,brotli:6", "simple chunks, brotli"),
    ("simple_zstd", "words", "group_size:50,zstd:3", "simple chunks, zstd (window_log 20)"),
    ("simple_snappy", "words", "group_size:50,snappy", "simple chunks, snappy"),
    ("transposed_none", "protos", "group_size:128,transpose,uncompressed",
     "transposed chunks ('t'), uncompressed; proto-like and non-proto records"),
    ("transposed_brotli", "protos", "group_size:128,transpose,brotli:6", "transposed chunks, brotli"),
    ("transposed_zstd", "protos", "group_size:128,transpose,zstd:3", "transposed chunks, zstd"),
    ("transposed_snappy", "protos", "group_size:128,transpose,snappy", "transposed chunks, snappy"),
    ("transposed_buckets", "protos", "group_size:350,transpose,transpose_bucket_size:1k,zstd:5",
     "transposed chunks with 1 KiB buckets (many buckets per chunk), zstd level 5"),
    ("boundaries", "boundaries", "group_size:1,uncompressed",
     "group_size:1, one chunk per record; chunks begin 1 and 40 bytes before a block "
     "boundary (a block header splits a chunk header; another follows a chunk header); "
     "empty records"),
    ("large_record", "large", "group_size:3,zstd:3",
     "a 200+ KiB record (streamed zstd frames without content size), empty records"),
    ("padded", "small", "group_size:3,pad_to_block_boundary:true,uncompressed",
     "pad_to_block_boundary:true: padding chunks ('p') after each data chunk"),
    ("empty", "empty", "group_size:10,zstd:3", "no records: signature chunk only"),
]


def write_array_record(path, records, options):
    writer = array_record_module.ArrayRecordWriter(path, options)
    for record in records:
        writer.write(record)
    writer.close()
    reader = array_record_module.ArrayRecordReader(path)
    got = list(reader.read_all()) if records else []
    assert reader.num_records() == len(records), path
    assert got == records, f"C++ reader disagrees with the records written to {path}"


def decode_simple_uncompressed(payload, num_records):
    """Records of an uncompressed simple chunk (compression_type 0)."""
    assert payload[0] == 0
    sizes_len, pos = read_varint(payload, 1)
    sizes_end = pos + sizes_len
    sizes = []
    while pos < sizes_end:
        size, pos = read_varint(payload, pos)
        sizes.append(size)
    assert pos == sizes_end and len(sizes) == num_records
    records = []
    for size in sizes:
        records.append(payload[pos:pos + size])
        pos += size
    assert pos == len(payload)
    return records


def parse_proto_fields(message):
    """field number -> list of varint / bytes values (flat)."""
    fields, pos = {}, 0
    while pos < len(message):
        key, pos = read_varint(message, pos)
        if key & 7 == 0:
            value, pos = read_varint(message, pos)
        elif key & 7 == 2:
            length, pos = read_varint(message, pos)
            value, pos = message[pos:pos + length], pos + length
        else:
            raise AssertionError(f"unexpected wire type {key & 7}")
        fields.setdefault(key >> 3, []).append(value)
    return fields


# --------------------------------------------------------------------------
# Damage.

def flip(buf, offset):
    buf[offset] ^= 0xFF


def forge_block_header(buf, block_begin, prev, nxt):
    fields = struct.pack("<2Q", prev, nxt)
    buf[block_begin:block_begin + BLOCK_HEADER_SIZE] = struct.pack("<Q", highway_hash(fields)) + fields


def crossing(chunks, boundary):
    """The chunk whose extent [offset, chunk_end) contains `boundary`, begun before it."""
    for c in chunks:
        if c["offset"] < boundary < c["chunk_end"]:
            return c
    raise AssertionError(f"no chunk crosses {boundary}")


def data_start(c):
    return add_with_overhead(c["offset"], CHUNK_HEADER_SIZE)


def make_corruptions(valid):
    """(name, source, damage-fn) for every corrupt file. Each damage function
    takes a bytearray copy of the source and the source's chunks, damages the
    copy and returns (bytes, description dict)."""

    def chunk_data_flip(buf, chunks):
        c = crossing(chunks, BLOCK_SIZE)
        offset = BLOCK_SIZE + BLOCK_HEADER_SIZE + 100
        assert add_with_overhead(data_start(c), 1) <= offset < add_with_overhead(data_start(c), c["data_size"])
        flip(buf, offset)
        return buf, {"offset": offset, "how": "xor 0xff of one chunk data byte",
                     "description": f"a data byte (after the block header at {BLOCK_SIZE}) of the "
                                    f"chunk at {c['offset']}: its data hash fails"}

    def chunk_header_flip(buf, chunks):
        data_chunks = [c for c in chunks if c["chunk_type"] == "r"]
        c = data_chunks[4]
        offset = c["offset"] + 8  # the first byte of data_size
        flip(buf, offset)
        return buf, {"offset": offset, "how": "xor 0xff of a chunk header byte (data_size)",
                     "description": f"the header of the chunk at {c['offset']}: its header hash "
                                    f"fails; recovery resumes where the next block header points"}

    def block_header_flip(buf, chunks):
        c = crossing(chunks, BLOCK_SIZE)
        assert c["offset"] + CHUNK_HEADER_SIZE < BLOCK_SIZE
        offset = BLOCK_SIZE + 3  # a byte of header_hash
        flip(buf, offset)
        return buf, {"offset": offset, "how": "xor 0xff of a block header byte (header_hash)",
                     "description": f"the block header at {BLOCK_SIZE}, inside the chunk at "
                                    f"{c['offset']} whose header and data are intact"}

    def block_header_flip_in_chunk_header(buf, chunks):
        c = crossing(chunks, BLOCK_SIZE)
        assert c["offset"] == BLOCK_SIZE - 1, c
        cut = c["chunk_end"]
        offset = BLOCK_SIZE + 5  # a byte of header_hash
        flip(buf, offset)
        return buf[:cut], {"offset": offset, "how": "xor 0xff of a block header byte (header_hash), "
                           f"file cut at the chunk boundary {cut}",
                           "description": f"the block header at {BLOCK_SIZE}, which splits the header "
                                          f"of the chunk at {c['offset']} after its first byte; the "
                                          f"file is the first {cut} bytes of the source, up to the "
                                          f"end of that chunk"}

    def block_header_forged_previous(buf, chunks):
        c = crossing(chunks, BLOCK_SIZE)
        prev, nxt = BLOCK_SIZE - c["offset"], c["chunk_end"] - BLOCK_SIZE
        forge_block_header(buf, BLOCK_SIZE, prev + 7, nxt)
        return buf, {"offset": BLOCK_SIZE, "how": "block header rewritten with a valid hash and "
                     f"previous_chunk {prev + 7} instead of {prev}",
                     "description": f"the block header at {BLOCK_SIZE} inside the chunk at "
                                    f"{c['offset']} points at a different chunk beginning; its "
                                    f"next_chunk ({nxt}) is right and C++ trusts it"}

    def block_header_forged_next(buf, chunks):
        c = crossing(chunks, BLOCK_SIZE)
        prev, nxt = BLOCK_SIZE - c["offset"], c["chunk_end"] - BLOCK_SIZE
        forge_block_header(buf, BLOCK_SIZE, prev, nxt + 16)
        return buf, {"offset": BLOCK_SIZE, "how": "block header rewritten with a valid hash and "
                     f"next_chunk {nxt + 16} instead of {nxt}",
                     "description": f"the block header at {BLOCK_SIZE} inside the chunk at "
                                    f"{c['offset']} points at a different chunk end"}

    def zeroed_block(buf, chunks):
        buf[BLOCK_SIZE:2 * BLOCK_SIZE] = bytes(BLOCK_SIZE)
        return buf, {"offset": BLOCK_SIZE, "length": BLOCK_SIZE, "how": "zero bytes over a whole block",
                     "description": f"the block [{BLOCK_SIZE}, {2 * BLOCK_SIZE}) is all zeros, "
                                    f"block header included"}

    def truncated_mid_chunk(buf, chunks):
        c = crossing(chunks, BLOCK_SIZE)
        cut = BLOCK_SIZE + 1000
        assert cut < c["chunk_end"]
        return buf[:cut], {"offset": cut, "how": "truncated",
                           "description": f"the file ends at {cut}, in the data of the chunk at "
                                          f"{c['offset']}"}

    def truncated_mid_chunk_header(buf, chunks):
        c = crossing(chunks, BLOCK_SIZE)
        assert c["offset"] == BLOCK_SIZE - 1, c
        cut = BLOCK_SIZE + BLOCK_HEADER_SIZE + 20
        return buf[:cut], {"offset": cut, "how": "truncated",
                           "description": f"the file ends at {cut}, inside the header of the chunk at "
                                          f"{c['offset']} (which a block header splits after its "
                                          f"first byte)"}

    def truncated_at_block_header(buf, chunks):
        c = crossing(chunks, BLOCK_SIZE)
        cut = BLOCK_SIZE + 10
        return buf[:cut], {"offset": cut, "how": "truncated",
                           "description": f"the file ends at {cut}, inside the block header at "
                                          f"{BLOCK_SIZE} (in the chunk at {c['offset']})"}

    return [
        ("chunk_data_flip", "simple_none", chunk_data_flip),
        ("chunk_header_flip", "simple_none", chunk_header_flip),
        ("block_header_flip", "simple_none", block_header_flip),
        ("block_header_flip_in_chunk_header", "boundaries", block_header_flip_in_chunk_header),
        ("block_header_forged_previous", "simple_none", block_header_forged_previous),
        ("block_header_forged_next", "simple_none", block_header_forged_next),
        ("zeroed_block", "simple_none", zeroed_block),
        ("truncated_mid_chunk", "simple_none", truncated_mid_chunk),
        ("truncated_mid_chunk_header", "boundaries", truncated_mid_chunk_header),
        ("truncated_at_block_header", "simple_none", truncated_at_block_header),
    ]


# --------------------------------------------------------------------------
# Manifest, README and checksums.

def record_ranges(chunks):
    """chunk offset -> indices of the records it holds (records are numbered
    in chunk order; signature and padding chunks hold none)."""
    ranges, first = {}, 0
    for c in chunks:
        ranges[c["offset"]] = range(first, first + c["num_records"])
        first += c["num_records"]
    return ranges


def to_json(value, indent=0):
    """JSON with one chunk per line and integer lists on one line."""
    pad = "  " * indent
    if isinstance(value, dict):
        if all(not isinstance(v, (dict, list)) for v in value.values()):
            return json.dumps(value)
        items = [f'{pad}  {json.dumps(k)}: {to_json(v, indent + 1)}' for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return json.dumps(value)
        items = [f"{pad}  {to_json(v, indent + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(value)


def check_array_record(name, data, records, options):
    """Walks a C++ ArrayRecord file and checks it against the spec; returns
    (chunks, footer_offset)."""
    assert len(data) % BLOCK_SIZE == 0 and len(data) >= 2 * BLOCK_SIZE, name
    chunks, payloads, error, damaged = walk(data)
    assert error is None and not damaged, f"{name}: {error}"
    assert data[:64] == FILE_START
    by_offset = {c["offset"]: (c, p) for c, p in zip(chunks, payloads)}
    post, post_payload = by_offset[len(data) - BLOCK_SIZE]
    assert post["chunk_type"] == "r" and post["num_records"] == 3
    post_records = decode_simple_uncompressed(post_payload, 3)
    assert post_records[0] == post_records[1] == post_records[2]
    fields = parse_proto_fields(post_records[0])
    footer_offset = fields[1][0]
    assert fields[2] == [POSTSCRIPT_MAGIC]
    footer, footer_payload = by_offset[footer_offset]
    assert footer["chunk_type"] == "r"
    data_chunks = [c for c in chunks if c["offset"] < footer_offset and c["chunk_type"] in "rt"]
    assert sum(c["num_records"] for c in data_chunks) == len(records), name
    assert all(c["chunk_type"] in "sp" for c in chunks if c["offset"] < footer_offset and c not in data_chunks)
    assert footer["num_records"] == 1 + len(data_chunks)
    if "uncompressed" in options:
        footer_records = decode_simple_uncompressed(footer_payload, footer["num_records"])
        meta = parse_proto_fields(parse_proto_fields(footer_records[0])[1][0])
        assert meta[1] == [1] and meta[2] == [len(data_chunks)] and meta[3] == [len(records)]
        for c, entry in zip(data_chunks, footer_records[1:]):
            entry = parse_proto_fields(entry)
            assert entry == {1: [c["offset"]], 2: [c["decoded_data_size"]], 3: [c["num_records"]]}
        if "transpose" not in options:
            decoded = []
            for c in data_chunks:
                decoded += decode_simple_uncompressed(by_offset[c["offset"]][1], c["num_records"])
            assert decoded == records, name
    return chunks, footer_offset


def generate(out):
    sets = build_record_sets()
    for sub in ("records", "array_record", "valid", "corrupt"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
        os.makedirs(os.path.join(out, sub))

    used_sets = []
    for _, set_name, _, _ in ARRAY_RECORD_FILES:
        if set_name not in used_sets:
            used_sets.append(set_name)
    record_sets = {}
    for set_name in used_sets:
        path = f"records/{set_name}.delimited"
        with open(os.path.join(out, path), "wb") as f:
            f.write(delimited(sets[set_name]))
        record_sets[set_name] = {
            "path": path, "num_records": len(sets[set_name]),
            "total_size": sum(len(r) for r in sets[set_name]),
            "max_record_size": max((len(r) for r in sets[set_name]), default=0),
        }

    files, valid = [], {}
    for name, set_name, options, covers in ARRAY_RECORD_FILES:
        records = sets[set_name]
        ar_path = f"array_record/{name}.array_record"
        write_array_record(os.path.join(out, ar_path), records, options)
        with open(os.path.join(out, ar_path), "rb") as f:
            data = f.read()
        chunks, footer_offset = check_array_record(name, data, records, options)
        files.append({
            "path": ar_path, "kind": "array_record", "options": options, "records": set_name,
            "num_records": len(records), "size": len(data), "footer_offset": footer_offset,
            "covers": covers, "chunks": chunks,
        })
        plain = data[:footer_offset]
        plain_chunks, _, error, damaged = walk(plain)
        assert error is None and not damaged
        assert plain_chunks == [c for c in chunks if c["offset"] < footer_offset]
        assert plain[:64] == FILE_START
        for lenient in (True, False):
            assert skipping_reader(plain, lenient) == [c["offset"] for c in plain_chunks]
        valid_path = f"valid/{name}.riegeli"
        with open(os.path.join(out, valid_path), "wb") as f:
            f.write(plain)
        valid[name] = (plain, plain_chunks, set_name)
        files.append({
            "path": valid_path, "kind": "valid", "options": options, "records": set_name,
            "num_records": len(records), "size": len(plain), "source": ar_path,
            "covers": covers, "chunks": plain_chunks,
        })

    # The boundary file must hold what its name promises.
    boundary_offsets = {c["offset"] for c in valid["boundaries"][1]}
    for k in (1, 40):
        assert any(o % BLOCK_SIZE == BLOCK_SIZE - k for o in boundary_offsets), k
    assert any(c["offset"] % BLOCK_SIZE == 0 and c["offset"] for c in valid["padded"][1])

    for name, source, damage_fn in make_corruptions(valid):
        plain, chunks, set_name = valid[source]
        damaged, damage = damage_fn(bytearray(plain), chunks)
        damaged = bytes(damaged)
        walked, _, error, damaged_headers = walk(damaged)
        assert error is not None or damaged_headers, name
        assert walked == chunks[:len(walked)], name
        ranges = record_ranges(chunks)
        outcome = {}
        for prefix, lenient in (("", True), ("cxx_", False)):
            survivors = skipping_reader(damaged, lenient)
            assert all(o in ranges for o in survivors), name
            outcome[prefix + "lost_chunks"] = [
                c["offset"] for c in chunks
                if c["num_records"] and c["offset"] < len(damaged) and c["offset"] not in survivors]
            if not prefix:
                outcome["expected_records"] = [i for o in survivors for i in ranges[o]]
        path = f"corrupt/{name}.riegeli"
        with open(os.path.join(out, path), "wb") as f:
            f.write(damaged)
        files.append({
            "path": path, "kind": "corrupt", "options": next(f["options"] for f in files
                                                             if f["path"] == f"valid/{source}.riegeli"),
            "records": set_name, "num_records": len(sets[set_name]), "size": len(damaged),
            "source": f"valid/{source}.riegeli", "damage": damage,
            "error": error.as_json() if error else None, "damaged_block_headers": damaged_headers,
            **outcome, "chunks": walked,
        })

    manifest = {
        "format": 1,
        "generator": "testdata/generate.py",
        "oracle": ORACLE,
        "record_sets": record_sets,
        "files": files,
    }
    with open(os.path.join(out, "MANIFEST.json"), "w") as f:
        f.write(to_json(manifest) + "\n")
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(readme(files, record_sets))
    write_sha256sums(out)


def readme(files, record_sets):
    lines = [
        "# Golden test data",
        "",
        "Every Riegeli file here was written by Google's C++ Riegeli, through the Python",
        f"package `{ORACLE}` from PyPI: its `ArrayRecordWriter` drives the C++ Riegeli",
        "`RecordWriter` compiled into that wheel (recent array_record sources pin riegeli",
        "`0.0.0-20250717-5b2e77e` from the Bazel Central Registry in `MODULE.bazel`; the",
        "wheel does not record the commit it was built from). `corrupt/` holds copies of",
        "those files damaged by the script, and `records/` the records it gave the writer.",
        "Do not edit these files by hand: `testdata/generate.py` regenerates all of them,",
        "deterministically.",
        "",
        "## Regenerating",
        "",
        "```sh",
        "cargo xtask testdata          # venv target/oracle-venv with array-record, then",
        "                              # python testdata/generate.py testdata",
        "cargo xtask testdata --check  # sha256sum --quiet --strict -c SHA256SUMS (CI runs this)",
        "```",
        "",
        "`generate.py` uses the standard library and `array_record` only. Records come from a",
        "seeded `random.Random`. An independent walker in the script (with its own",
        "HighwayHash) parses every file, verifies every block header, chunk header and data",
        "hash, checks the ArrayRecord postscript and footer, and decodes uncompressed simple",
        "chunks to compare them with the records written. The C++ `ArrayRecordReader` reads",
        "each ArrayRecord file back before anything is written to the manifest.",
        "",
        "## Layout",
        "",
        "- `records/<set>.delimited`: the records of a set, each as `varint(len)` followed by",
        "  the bytes (a protobuf delimited stream).",
        "- `array_record/<name>.array_record`: the C++ writer's output (see",
        "  `array-record.md` in the spec notes: data chunks, footer, postscript).",
        "- `valid/<name>.riegeli`: the same file cut at its footer offset: a plain",
        "  Riegeli/records file ending after the last data chunk (and its padding).",
        "- `corrupt/<name>.riegeli`: damaged copies of valid files.",
        "- `MANIFEST.json`: per file its options, record set, chunks and, for corrupt",
        "  files, the damage, the error a strict walk meets and the records a reader",
        "  that skips corruption returns. Schema below.",
        "- `SHA256SUMS`: every file here except itself.",
        "",
        "## Record sets",
        "",
        "| set | records | bytes | largest |",
        "|---|---|---|---|",
    ]
    for set_name, info in record_sets.items():
        lines.append(f"| `{set_name}` | {info['num_records']} | {info['total_size']} | "
                     f"{info['max_record_size']} |")
    lines += [
        "",
        "- `words`: lines of 0 to 60 words (text-like, compressible), some empty.",
        "- `protos`: hand-encoded protobuf messages: varints of every width, negative",
        "  int64 (ten-byte varints), fixed32, fixed64, doubles, strings, bytes, submessages",
        "  three levels deep, packed repeated varints, a group (wire types 3 and 4), sint64,",
        "  field numbers up to 2^29-1, fields out of order; plus empty records and records",
        "  that are not valid protos (random bytes, truncated messages, wire type 7, an",
        "  unmatched end-group, field number 0, plain text).",
        "- `boundaries`: record lengths chosen so that with `group_size:1,uncompressed`",
        "  chunks begin 1 and 40 bytes before a block boundary (a block header splits one",
        "  chunk header after its first byte; another chunk header ends exactly at the",
        "  boundary, so its data begins after the block header); empty records.",
        "- `large`: a text record of more than 200 KiB, a 20000-byte one, small and empty ones.",
        "- `small`: five short lines.",
        "- `empty`: no records.",
        "",
        "## Files",
        "",
        "Each ArrayRecord file `array_record/N.array_record` has a plain cut `valid/N.riegeli`.",
        "",
        "| name | records | writer options | what it covers | .array_record | .riegeli |",
        "|---|---|---|---|---|---|",
    ]
    by_path = {f["path"]: f for f in files}
    for f in files:
        if f["kind"] != "array_record":
            continue
        name = f["path"].split("/")[1].rsplit(".", 1)[0]
        plain = by_path[f"valid/{name}.riegeli"]
        lines.append(f"| `{name}` | `{f['records']}` | `{f['options']}` | {f['covers']} | "
                     f"{f['size']} | {plain['size']} |")
    lines += [
        "",
        "## Corrupt files",
        "",
        "For each damaged file the manifest gives the error a strict walk meets (parse every",
        "chunk from position 0 as `riegeli_framing::parse_chunk` does, then check its data",
        "hash), and which records a reader that skips corruption returns, as indices into the",
        "record set. Both record lists are computed by simulating the C++ `DefaultChunkReader`",
        "with `Recover()` (riegeli/records/chunk_reader.cc) over the damaged bytes:",
        "",
        "- a chunk data hash mismatch loses exactly that chunk (reading resumes at its end);",
        "- a chunk header hash mismatch resumes at the first block boundary at or after the",
        "  end of the chunk header: at that boundary if the block header's `previous_chunk`",
        "  is 0, else at `block_begin + next_chunk`; a block header that fails its hash there",
        "  moves the search on to the next block;",
        "- a block header with a valid hash whose `previous_chunk` disagrees with the chunk",
        "  being read is trusted for its `next_chunk` (if at most 64 KiB): reading resumes at",
        "  `block_begin + next_chunk`. One whose `next_chunk` disagrees makes the reader",
        "  search from the next block boundary;",
        "- a truncated file yields every complete chunk.",
        "",
        "They differ only for a block header inside a chunk whose hash fails:",
        "",
        "- `expected_records` (and `lost_chunks`): the block header is ignored while the",
        "  chunk is read, as the spec says (\"this block header is corrupted and must be",
        "  ignored\") and as `riegeli_framing::parse_chunk` does; the chunk's header and data",
        "  hashes still protect it, so nothing is lost if they match. The strict walk does",
        "  not stop there either: it lists the header in `damaged_block_headers`;",
        "- `cxx_lost_chunks`: C++ fails the chunk (ReadChunk",
        "  calls ReadBlockHeader, which checks the hash) and searches from the next block",
        "  boundary, losing that chunk and the rest of its block.",
        "",
        "| file | source | damage | strict walk | chunks lost (spec / C++) |",
        "|---|---|---|---|---|",
    ]
    for f in files:
        if f["kind"] != "corrupt":
            continue
        err = f["error"]
        if err is None:
            stops = "reads to the end; damaged block headers ignored at " + ", ".join(
                str(p) for p in f["damaged_block_headers"])
        else:
            stops = f"stops: {err['kind']} ({err['what']}) at {err['position']}"
        lines.append(f"| `{f['path']}` | `{f['source']}` | {f['damage']['description']} | {stops} | "
                     f"{len(f['lost_chunks'])} / {len(f['cxx_lost_chunks'])} |")
    lines += [
        "",
        "## MANIFEST.json schema",
        "",
        "```",
        "{",
        '  "format": 1, "generator": "testdata/generate.py", "oracle": "array-record 0.8.6",',
        '  "record_sets": { "<set>": { "path": "records/<set>.delimited", "num_records": N,',
        '                              "total_size": bytes, "max_record_size": bytes } },',
        '  "files": [ {',
        '    "path":        relative to testdata/, e.g. "valid/simple_zstd.riegeli",',
        '    "kind":        "array_record" | "valid" | "corrupt",',
        '    "options":     the ArrayRecordWriter options string used,',
        '    "records":     record set name (the file holds all its records, in order),',
        '    "num_records": records in the set (for corrupt files: in the undamaged source),',
        '    "size":        file size in bytes,',
        '    "chunks": [ { "offset", "chunk_type" (one character: "s" "r" "t" "p"),',
        '                  "data_size", "num_records", "decoded_data_size", "chunk_end" } ],',
        '                   every chunk from position 0 to the end of the file; for corrupt',
        '                   files only the chunks before the one where a strict walk stops',
        '    array_record only: "footer_offset", "covers" (description)',
        '    valid only:        "source" (the array_record file it was cut from), "covers"',
        '    corrupt only:',
        '      "source":  the valid file it was damaged from,',
        '      "damage":  { "offset", "how", "description" [, "length"] },',
        '      "error":   null if the strict walk reads to the end of the file, else',
        '                 { "kind", "what", "position" [, "needed", "have", "expected", "found"] }',
        '                 where the strict walk (parse every chunk from 0, check the block',
        '                 headers in it, then the data hash) stops:',
        '                 kind "hash_mismatch" (what: "chunk data" | "chunk header"),',
        '                 "incomplete" (what: "chunk header" | "chunk", needed/have counted from',
        '                 the chunk beginning), "block_header_mismatch" (what: "previous_chunk" |',
        '                 "next_chunk", with expected/found); position: the chunk beginning,',
        '                 or the block beginning for block header errors,',
        '      "damaged_block_headers": positions of block headers whose hash fails, ignored',
        '                 inside the chunks the strict walk read,',
        '      "lost_chunks", "expected_records": offsets of the source\'s record-bearing',
        '                 chunks that begin inside the damaged file but are not returned, and',
        '                 the indices into the record set of the records that are, by a reader',
        '                 that ignores damaged block headers inside a chunk (the spec),',
        '      "cxx_lost_chunks": the same for C++ DefaultChunkReader (its records are those of',
        '                 the source\'s chunks not listed, among those inside the damaged file)',
        "  } ]",
        "}",
        "```",
        "",
    ]
    return "\n".join(lines)


def write_sha256sums(out):
    entries = []
    for root, dirs, names in os.walk(out):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(names):
            rel = os.path.relpath(os.path.join(root, name), out).replace(os.sep, "/")
            if rel == "SHA256SUMS" or name.startswith("."):
                continue
            with open(os.path.join(root, name), "rb") as f:
                entries.append((rel, hashlib.sha256(f.read()).hexdigest()))
    with open(os.path.join(out, "SHA256SUMS"), "w") as f:
        for rel, digest in sorted(entries):
            f.write(f"{digest}  {rel}\n")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: generate.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    generate(out)


if __name__ == "__main__":
    main()
