#!/usr/bin/python3
"""Check the frames uroce builds against independent decoders.

For every operation of RC, UC and UD, over IPv4 and IPv6, with loss so that
NAKs and retransmissions appear, the simulator writes what the engine
transmits to a pcap. Then:
  - tshark (Wireshark's dissector) must decode every frame as RoCEv2
    (eth:ethertype:ip|ipv6:udp:infiniband) with nothing malformed;
  - scapy.contrib.roce must compute the same ICRC as the one we sent;
  - the fields Soft-RoCE sets the same way on every packet (DF, TTL 64,
    UDP checksum 0, P_Key 0xffff, TVer 0, AckReq on the opcodes rxe sets it
    on, AETH syndrome 0x1f on ACKs) must match the rxe captures in
    test/data/rxe;
  - UC and UD packets (not in the captures) follow rxe's rules instead:
    UC opcodes are RC's plus 0x20, UD sends carry a DETH with the Q_Key and
    the source QP, and neither sets AckReq (rxe since Linux 6.10, commit
    4adcaf969d77 "Dont set BTH_ACK_MASK for UC or UD QPs"; 6.1 set it on
    the last packet of a message, which responders ignore either way).
Then congestion control, with ECN CE marking on the way and traffic class
106: data packets carry DSCP 26 with ECT(0); the receiver's CNPs are what
Annex A17.9.2 and ConnectX send (opcode 0x81 to the requester's QP, BECN,
16 zero bytes, a valid ICRC, DSCP 48, Not-ECT), no closer than
min_time_between_cnps apart per QP, and both decoders agree.
Usage: check_wire.py <uroce-lab binary> <rxe capture dir> <scratch dir>
       check_wire.py --pcap FILE   (a capture the dataplane wrote: every
       RoCE frame decodes, every IPv4 ICRC matches scapy's, both directions)
"""
import os
import subprocess
import sys

from scapy.all import Ether, raw, rdpcap  # noqa: E402
from scapy.contrib.roce import BTH, CNPPadding  # noqa: E402
from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.inet6 import IPv6  # noqa: E402

OPS = ["write", "write-imm", "send", "send-imm", "read", "fetch-add", "cmp-swap"]
UC_OPS = ["write", "write-imm", "send", "send-imm"]
UD_OPS = ["send", "send-imm"]
# Opcodes every run together must show (IBTA table 38): RC, UC, UD.
EXPECTED = set(range(0, 21)) | set(range(0x20, 0x2c)) | {0x64, 0x65}
QKEY = 0x11111111  # uroce-lab sim's Q_Key

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def tshark_fields(pcap, fields):
    cmd = ["tshark", "-r", pcap, "-T", "fields", "-E", "separator=|"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [line.split("|") for line in out.splitlines()]


def icrc_ok(pkt):
    """Recompute the ICRC with scapy from the packet as sent."""
    sent = pkt[BTH].icrc
    again = Ether(raw(pkt))
    again[BTH].icrc = None
    return Ether(raw(again))[BTH].icrc == sent


def ip_of(pkt):
    return pkt[IP] if IP in pkt else pkt[IPv6]


def invariants(pkt):
    """Fields Soft-RoCE sets identically on every packet, as a tuple."""
    ip = ip_of(pkt)
    bth = pkt[BTH]
    v4 = IP in pkt
    return (
        "DF" if (v4 and ip.flags.DF) or not v4 else "no-DF",
        ip.ttl if v4 else ip.hlim,
        pkt[UDP].chksum,
        bth.pkey,
        bth.version,
        bth.migreq,
    )


def ackreq_rule(pkts):
    """Map opcode -> set of AckReq values seen."""
    rule = {}
    for p in pkts:
        rule.setdefault(p[BTH].opcode, set()).add(p[BTH].ackreq)
    return rule


def check_capture(pcap):
    """A capture written by the dataplane (UROCE_CAPTURE): both directions, all valid."""
    rows = tshark_fields(pcap, ["frame.protocols", "_ws.malformed", "udp.dstport",
                                "infiniband.bth.opcode"])
    roce = [r for r in rows if r[2] == "4791"]
    if len(roce) < 10:
        fail(f"{pcap}: only {len(roce)} RoCE frames")
    frames = rdpcap(pcap)
    # selective-repeat frames (BTH reserved bit 0x40 of byte 8) carry uroce's
    # extension headers, which Wireshark does not know: their ICRC is checked
    sr = {i for i, p in enumerate(frames, 1) if BTH in p and raw(p[BTH])[8] & 0x40}
    for i, (protos, malformed, _, _) in enumerate(rows, 1):
        if i in sr:
            continue
        if "infiniband" in protos and (malformed or not protos.startswith("eth:ethertype:ip")):
            fail(f"{pcap} frame {i}: tshark decodes {protos!r} malformed={malformed!r}")
    pkts = [p for p in frames if BTH in p]
    sources = {ip_of(p).src for p in pkts}
    if len(sources) < 2:
        fail(f"{pcap}: frames from {sources} only, not both directions")
    bad = [i for i, p in enumerate(pkts, 1) if IP in p and not icrc_ok(p)]
    if bad:
        fail(f"{pcap}: {len(bad)} ICRCs differ from scapy's (frames {bad[:5]}...)")
    opcodes = sorted({p[BTH].opcode for p in pkts})
    print(f"capture {pcap}: {len(pkts)} RoCE frames ({len(sr)} selective-repeat) from "
          f"{len(sources)} addresses, opcodes {opcodes}, every ICRC valid"
          if not failures else "capture check failed")
    return 1 if failures else 0


def check_cnp(uroce, scratch, inv_theirs):
    """ECT and DSCP on data, CNP framing and spacing, against tshark and scapy."""
    for family in ("4", "6"):
        pcap = os.path.join(scratch, f"wire-cnp-ipv{family}.pcap")
        cmd = [uroce, "sim", "--op", "write", "--msg-size", "64K", "--messages", "16",
               "--rate", "10G", "--ce", "0.2", "--tclass", "106", "--timeout", "10",
               "--seed", "5", "--quiet", "--csv", "--pcap", pcap]
        if family == "6":
            cmd.append("--ipv6")
        subprocess.run(cmd, check=True, capture_output=True)
        ip_fields = ["ipv6.tclass.dscp", "ipv6.tclass.ecn"] if family == "6" else \
            ["ip.dsfield.dscp", "ip.dsfield.ecn"]
        rows = tshark_fields(pcap, ["frame.protocols", "_ws.malformed", "infiniband.bth.opcode",
                                    "infiniband.bth.destqp"] + ip_fields)
        cnps = [r for r in rows if r[2] == "129"]
        data = [r for r in rows if r[2] in ("6", "7", "8")]
        if len(cnps) < 5 or len(data) < 100:
            fail(f"{pcap}: {len(cnps)} CNPs and {len(data)} data packets, expected more")
        want = f"eth:ethertype:ip{'v6' if family == '6' else ''}:udp:infiniband"
        for i, (protos, malformed, opcode, dqp, dscp, ecn) in enumerate(rows, 1):
            if malformed or not protos.startswith(want):
                fail(f"{pcap} frame {i}: tshark decodes {protos!r} malformed={malformed!r}")
        for r in data:
            if (r[4], r[5]) != ("26", "2"):
                fail(f"{pcap}: data packet with DSCP {r[4]} ECN {r[5]}, want 26 and ECT(0)")
                break
        for r in cnps:
            if (r[4], r[5]) != ("48", "0"):
                fail(f"{pcap}: CNP with DSCP {r[4]} ECN {r[5]}, want 48 and Not-ECT")
                break
        pkts = rdpcap(pcap)
        acks_to = {p[BTH].dqpn for p in pkts if BTH in p and p[BTH].opcode == 17}
        last = {}
        for i, p in enumerate(pkts, 1):
            if BTH not in p or p[BTH].opcode != 0x81:
                continue
            b = p[BTH]
            ip = ip_of(p)
            if not b.becn or b.fecn or b.psn or b.ackreq or b.padcount or b.pkey != 0xffff:
                fail(f"{pcap} frame {i}: CNP BTH fields {b.summary()} becn={b.becn} psn={b.psn}")
            if CNPPadding not in p or raw(p[CNPPadding]) != bytes(16):
                fail(f"{pcap} frame {i}: CNP without its 16 reserved zero bytes")
            if b.dqpn not in acks_to:
                fail(f"{pcap} frame {i}: CNP to QP {b.dqpn:#x}, not the requester's {acks_to}")
            if ip.src != ("fd00::2" if family == "6" else "10.0.0.2"):
                fail(f"{pcap} frame {i}: CNP from {ip.src}, not from the receiver")
            if family == "4" and not icrc_ok(p):
                fail(f"{pcap} frame {i}: CNP ICRC differs from scapy's")
            if family == "4" and invariants(p) not in inv_theirs:
                fail(f"{pcap} frame {i}: CNP header invariants {invariants(p)} not rxe's")
            t = float(p.time)
            if b.dqpn in last and t - last[b.dqpn] < 4e-6 - 1e-9:
                fail(f"{pcap} frame {i}: CNPs {1e6 * (t - last[b.dqpn]):.2f} us apart (< 4 us)")
            last[b.dqpn] = t
        print(f"{pcap}: {len(cnps)} CNPs, {len(data)} ECT(0) DSCP 26 data packets")


def main():
    if sys.argv[1] == "--pcap":
        return check_capture(sys.argv[2])
    uroce, rxe_dir, scratch = sys.argv[1:4]
    os.makedirs(scratch, exist_ok=True)
    seen = set()
    ours = []
    naks = 0
    unacked = []
    runs = [("rc", family, op, size) for family in ("4", "6") for op in OPS
            for size in ("9000", "2000")]
    runs += [("uc", family, op, size) for family in ("4", "6") for op in UC_OPS
             for size in ("9000", "2000")]
    runs += [("ud", family, op, size) for family in ("4", "6") for op in UD_OPS
             for size in ("4096", "2001")]
    for transport, family, op, size in runs:
        pcap = os.path.join(scratch, f"wire-{transport}-{op}-{size}-ipv{family}.pcap")
        cmd = [uroce, "sim", "--transport", transport, "--op", op, "--msg-size", size,
               "--messages", "8", "--mtu", "4096", "--rate", "10G", "--loss", "0.05",
               "--loss-back", "0.02", "--seed", "3", "--quiet", "--csv", "--pcap", pcap]
        if family == "6":
            cmd.append("--ipv6")
        subprocess.run(cmd, check=True, capture_output=True)
        rows = tshark_fields(pcap, ["frame.protocols", "_ws.malformed",
                                    "infiniband.bth.opcode", "infiniband.aeth.syndrome",
                                    "infiniband.bth.a", "infiniband.deth.q_key",
                                    "infiniband.deth.srcqp"])
        if not rows:
            fail(f"{pcap}: no frames")
        for i, (protos, malformed, opcode, syn, ackreq, qkey, srcqp) in enumerate(rows, 1):
            want = f"eth:ethertype:ip{'v6' if family == '6' else ''}:udp:infiniband"
            if not protos.startswith(want) or malformed:
                fail(f"{pcap} frame {i}: tshark decodes {protos!r} malformed={malformed!r}")
            opcode = int(opcode)
            seen.add(opcode)
            if syn and (int(syn) & 0xe0) == 0x60:
                naks += 1
            if transport == "rc" and opcode >= 0x20:
                fail(f"{pcap} frame {i}: RC QP sent opcode {opcode:#x}")
            if transport == "uc" and not 0x20 <= opcode <= 0x2b:
                fail(f"{pcap} frame {i}: UC QP sent opcode {opcode:#x}")
            if transport == "ud":
                if opcode not in (0x64, 0x65):
                    fail(f"{pcap} frame {i}: UD QP sent opcode {opcode:#x}")
                elif not qkey or int(qkey, 16) != QKEY or not srcqp or int(srcqp, 16) == 0:
                    fail(f"{pcap} frame {i}: DETH Q_Key {qkey!r} source QP {srcqp!r}")
            if transport != "rc" and ackreq != "0":
                fail(f"{pcap} frame {i}: AckReq {ackreq!r} on an unacknowledged service")
        pkts = rdpcap(pcap)
        for i, p in enumerate(pkts, 1):
            if BTH not in p:
                fail(f"{pcap} frame {i}: scapy finds no BTH")
                continue
            # scapy computes the ICRC over IPv4 only; IPv6 ICRCs are checked
            # against Linux's own in test/unit/test_icrc.c
            if family == "4" and not icrc_ok(p):
                fail(f"{pcap} frame {i}: ICRC differs from scapy's")
        ours += list(pkts)
        if transport != "rc":
            unacked += list(pkts)
    missing = EXPECTED - seen
    if missing:
        fail(f"opcodes never produced: {sorted(missing)}")
    if not naks:
        fail("no NAK was produced under loss")

    # field-by-field invariants against Soft-RoCE
    theirs = []
    for name in sorted(os.listdir(rxe_dir)):
        if name.endswith(".pcap"):
            theirs += [p for p in rdpcap(os.path.join(rxe_dir, name)) if BTH in p]
    inv_theirs = {invariants(p) for p in theirs}
    inv_ours = {invariants(p) for p in ours}
    if inv_ours - inv_theirs:
        fail(f"header invariants rxe never shows: {inv_ours - inv_theirs} (rxe: {inv_theirs})")
    rule_theirs, rule_ours = ackreq_rule(theirs), ackreq_rule(ours)
    for opcode, vals in rule_ours.items():
        if opcode in rule_theirs and not vals <= rule_theirs[opcode]:
            fail(f"opcode {opcode}: AckReq {vals}, rxe {rule_theirs[opcode]}")
    for p in ours:
        # the AETH follows the 12-byte BTH; ACKs carry "credits invalid" (0x1f) as rxe does
        syndrome = raw(p[BTH])[12] if p[BTH].opcode in (13, 15, 16, 17, 18) else None
        if syndrome is not None and (syndrome & 0xe0) == 0 and syndrome != 0x1f:
            fail(f"ACK with syndrome {syndrome:#x}, rxe sends 0x1f: {p.summary()}")
            break

    if not unacked:
        fail("no UC or UD frames were produced")
    check_cnp(uroce, scratch, inv_theirs)

    print(f"checked {len(ours)} frames ({len(unacked)} UC/UD; {len(seen)} opcodes, {naks} NAKs) "
          f"against tshark, scapy and {len(theirs)} Soft-RoCE frames")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
