#!/usr/bin/env python3
"""Checks what semantics.spec relies on against DPDK's SWX pipeline.

  semantics_check.py gen      writes semantics_in.pcap (64 frames: IPv4 TCP/UDP, some ARP)
  (run swx_bench once with semantics.so, semantics.io, --table route=semantics.entries)
  semantics_check.py check    reads semantics_out0.pcap / semantics_out1.pcap, prints each
                              disagreement and "errors N"; exits 1 if N > 0

Both work in the current directory. What is checked, per IPv4 frame (port 1):
  ethernet.src_addr (48 bits) = the low byte of ipv4.src_addr (mov narrows, then widens);
  ipv4.identification = the low 16 bits of ipv4.dst_addr (mov h16 <- h32);
  ttl - 1 and a valid header checksum (cksub/ckadd around both changes);
  tag.b = per-protocol count from initval 5 (regadd then regrd, index = ipv4.protocol);
  tag.c = 0x2222 for 10.1/16, 0x1111 for other 10/8, else 0x2345 (`mov h16 0x12345`);
  tag.flags = 1 (m32 = h8 compares equal) | 2 if the new ttl is not above 100;
  a 9-byte tag between ethernet and ipv4 (validate, emit order); UDP frames lose ipv4
  (invalidate) and keep their payload; tag.a = ipv4.total_len of the frame 16 earlier
  (metadata is per thread, 16 threads, not cleared), 0 for the first 16 frames.
ARP frames (port 0) come out unchanged.
"""
import struct
import sys

IN, OUT0, OUT1 = "semantics_in.pcap", "semantics_out0.pcap", "semantics_out1.pcap"


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, p in enumerate(frames):
            f.write(struct.pack("<IIII", i, 0, len(p), len(p)))
            f.write(p)


def read_pcap(path):
    d = open(path, "rb").read()
    off, out = 24, []
    while off < len(d):
        _, _, incl, _ = struct.unpack("<IIII", d[off:off + 16])
        off += 16
        out.append(d[off:off + incl])
        off += incl
    return out


def fold(words):
    s = sum(words)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def frames():
    import random
    rnd = random.Random(1)
    out = []
    for i in range(64):
        eth = (0x0CC47AA32534).to_bytes(6, "big") + (0x020000000000 + i).to_bytes(6, "big")
        if i % 8 == 7:
            out.append(eth + b"\x08\x06" + bytes(range(242)))
            continue
        ttl = rnd.choice([1, 64, 100, 101, 255])
        proto = 17 if i % 3 == 0 else 6
        sa = rnd.getrandbits(32)
        da = rnd.choice([0x0A010203, 0x0A020304, 0x0B000001])
        h = struct.pack("!BBHHHBBHII", 0x45, 0, 242, rnd.getrandbits(16), 0x4000, ttl,
                        proto, 0, sa, da)
        c = (~fold(struct.unpack("!10H", h))) & 0xFFFF
        h = h[:10] + struct.pack("!H", c) + h[12:]
        # The last payload byte identifies the frame.
        out.append(eth + b"\x08\x00" + h + bytes((i + k) & 0xFF for k in range(222)))
    return out


def check():
    inp = frames()
    o0, o1 = read_pcap(OUT0), read_pcap(OUT1)
    errs = []
    if o0 != [p for p in inp if p[12:14] == b"\x08\x06"]:
        errs.append("port 0: the ARP frames, unchanged and in order")
    ips = [p for p in inp if p[12:14] == b"\x08\x00"]
    if [q[-1] for q in o1] != [p[-1] for p in ips]:
        errs.append("port 1: not in input order")
    by_id = {p[-1]: p for p in ips}
    seq = {p[-1]: n for n, p in enumerate(inp)}
    regs = {}
    for q in o1:
        p = by_id[q[-1]]
        ttl, proto = p[22], p[23]
        sa, da = struct.unpack("!II", p[26:34])
        a, b, c, flags = struct.unpack("!HIHB", q[14:23])
        regs[proto] = regs.get(proto, 5) + 1
        n = seq[q[-1]]
        want_a = 0 if n < 16 else (242 if inp[n - 16][12:14] == b"\x08\x00" else None)
        want_c = 0x2222 if da >> 16 == 0x0A01 else 0x1111 if da >> 24 == 0x0A else 0x2345
        new_ttl = (ttl - 1) & 0xFF
        want = {
            "src": (q[6:12], (sa & 0xFF).to_bytes(6, "big")),
            "tag.b": (b, regs[proto]),
            "tag.c": (c, want_c),
            "tag.flags": (flags, 1 | (0 if new_ttl > 100 else 2)),
        }
        if want_a is not None:
            want["tag.a"] = (a, want_a)
        if proto == 17:
            want["decap"] = (q[23:], p[34:])
        else:
            ip = q[23:43]
            want["rest"] = (q[43:], p[34:])
            want["ttl"] = (ip[8], new_ttl)
            want["ident"] = (struct.unpack("!H", ip[4:6])[0], da & 0xFFFF)
            want["csum"] = (fold(struct.unpack("!10H", ip)), 0xFFFF)
        for k, (got, exp) in want.items():
            if got != exp:
                errs.append(f"frame {n} (ttl {ttl} proto {proto}): {k} {got!r} != {exp!r}")
    for e in errs:
        print(e)
    print(f"ip {len(o1)} arp {len(o0)} errors {len(errs)}")
    return 1 if errs else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["gen"]:
        write_pcap(IN, frames())
    elif sys.argv[1:] == ["check"]:
        sys.exit(check())
    else:
        sys.exit(__doc__)
