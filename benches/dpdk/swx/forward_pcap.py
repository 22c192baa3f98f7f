#!/usr/bin/env python3
"""Writes the trace for the forward example: N 256-byte Ethernet frames whose destination
MAC cycles through ...:34 (port 1), ...:35 (port 2) and ...:36 (no entry: dropped).

Usage: forward_pcap.py OUT.pcap [N]
"""
import struct
import sys

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 30
dsts = [0x0CC47AA32534, 0x0CC47AA32535, 0x0CC47AA32536]
with open(out, "wb") as f:
    # pcap global header: magic, v2.4, thiszone, sigfigs, snaplen, DLT_EN10MB
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    for i in range(n):
        dst = dsts[i % len(dsts)].to_bytes(6, "big")
        src = (0x020000000000 + i).to_bytes(6, "big")
        payload = bytes((i + k) & 0xFF for k in range(256 - 14))
        frame = dst + src + b"\x08\x00" + payload
        f.write(struct.pack("<IIII", i, 0, len(frame), len(frame)))
        f.write(frame)
