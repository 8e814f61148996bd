#!/usr/bin/python3
"""Check uroce's CM MADs against Wireshark's CM dissector (issue 22).

  1. cm_frames writes one RoCEv2 frame per CM message uroce encodes (REQ,
     MRA, REP, RTU, DREQ, DREP, a second REQ and its REJ, SIDR_REQ,
     SIDR_REP), over IPv4 and again over IPv6. tshark must decode each as
     eth:ethertype:ip(v6):udp:infiniband, name the message, show nothing
     malformed and no expert info (but IPv6's UDP checksum 0, which RoCEv2
     and Soft-RoCE send), and show every field it dissects with the value
     uroce encoded; scapy must compute the ICRC we sent (IPv4), and uroce's
     own parser must take every frame back (ICRC checked, both versions).
  2. cm_frames decodes every MAD of Soft-RoCE's rdma_cm captures; tshark
     must read the same values from them.
Wireshark 4.0 leaves MRA, SIDR_REQ and SIDR_REP undissected ("Dissector Not
Implemented"): for them the MAD header is compared. It also reads a REQ
path's flow label and packet rate from the wrong bytes (for Linux's REQ in
rxe-cm-rping.pcap it shows flow label 0x000fa where the bytes hold 0x4375b,
and rxe's UDP source port, which Linux derives from the flow label, agrees
with 0x4375b): those two fields are not compared.
Usage: check_cm.py <cm_frames binary> <cm capture dir> <scratch dir>
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_wire import icrc_ok  # noqa: E402
from scapy.all import rdpcap  # noqa: E402
from scapy.contrib.roce import BTH  # noqa: E402
from scapy.layers.inet import IP  # noqa: E402

HEADINGS = {
    "REQ": "CM ConnectRequest",
    "MRA": "CM MsgRcptAck",
    "REJ": "CM ConnectReject",
    "REP": "CM ConnectReply",
    "RTU": "CM ReadyToUse",
    "DREQ": "CM DisconnectRequest",
    "DREP": "CM DisconnectReply",
    "SIDR_REQ": "CM ServiceIDResReq",
    "SIDR_REP": "CM ServiceIDResReqResp",
}

HDR = {
    "hdr.base_version": "infiniband.mad.baseversion",
    "hdr.mgmt_class": "infiniband.mad.mgmtclass",
    "hdr.class_version": "infiniband.mad.classversion",
    "hdr.method": "infiniband.mad.method",
    "hdr.status": "infiniband.mad.status",
    "hdr.class_specific": "infiniband.mad.classspecific",
    "hdr.tid": "infiniband.mad.transactionid",
    "hdr.attr_id": "infiniband.mad.attributeid",
    "hdr.attr_mod": "infiniband.mad.attributemodifier",
}


def path_fields(ours, theirs):
    return {f"{ours}.{a}": f"infiniband.cm.req.{theirs}_{b}" for a, b in [
        ("local_lid", "locallid"), ("remote_lid", "remotelid"),
        ("traffic_class", "tfcclass"), ("hop_limit", "hoplim"), ("sl", "sl"),
        ("subnet_local", "subnetlocal"), ("local_ack_timeout", "localacktout")]}


R = "infiniband.cm.req."
P = "infiniband.cm.rep."
FIELDS = {
    "REQ": {
        "local_comm_id": "infiniband.cm.req",
        "service_id.protocol": R + "serviceid.protocol",
        "service_id.port": R + "serviceid.dport",
        "local_ca_guid": R + "localcaguid",
        "local_qkey": R + "localqkey",
        "local_qpn": R + "localqpn",
        "responder_resources": R + "responderres",
        "local_eecn": R + "localeecn",
        "initiator_depth": R + "initdepth",
        "remote_eecn": R + "remoteeecn",
        "remote_cm_response_timeout": R + "remoteresptout",
        "transport_service_type": R + "transpsvctype",
        "e2e_flow_control": R + "e2eflowctrl",
        "starting_psn": R + "startpsn",
        "local_cm_response_timeout": R + "localresptout",
        "retry_count": R + "retrcount",
        "pkey": R + "pkey",
        "path_mtu": R + "pppmtu",
        "rdc_exists": R + "rdcexist",
        "rnr_retry_count": R + "rnrretrcount",
        "max_cm_retries": R + "maxcmretr",
        "srq": R + "srq",
        "ext_transport_type": R + "ext_transport",
        **path_fields("primary", "prim"),
        **path_fields("alternate", "alt"),
        "ip.version": R + "ip_cm.ipv",
        "ip.src_port": R + "ip_cm.sport",
        "ip.src": R + "ip_cm.sip4",
        "ip.dst": R + "ip_cm.dip4",
        "ip.src6": R + "ip_cm.sip6",
        "ip.dst6": R + "ip_cm.dip6",
    },
    "REP": {
        "local_comm_id": "infiniband.cm.rep",
        "remote_comm_id": P + "remotecommid",
        "local_qkey": P + "localqkey",
        "local_qpn": P + "localqpn",
        "local_eecn": P + "localeecn",
        "starting_psn": P + "startpsn",
        "responder_resources": P + "respres",
        "initiator_depth": P + "initdepth",
        "target_ack_delay": P + "tgtackdelay",
        "failover_accepted": P + "failoveracc",
        "e2e_flow_control": P + "e2eflowctrl",
        "rnr_retry_count": P + "rnrretrcount",
        "srq": P + "srq",
        "local_ca_guid": P + "localcaguid",
    },
    "RTU": {
        "local_comm_id": "infiniband.cm.rtu.localcommid",
        "remote_comm_id": "infiniband.cm.rtu.remotecommid",
    },
    "REJ": {
        "local_comm_id": "infiniband.cm.rej.localcommid",
        "remote_comm_id": "infiniband.cm.rej.remotecommid",
        "message_rejected": "infiniband.cm.rej.msgrej",
        "ari_length": "infiniband.cm.rej.rejinfolen",
        "reason": "infiniband.cm.rej.reason",
    },
    "DREQ": {
        "local_comm_id": "infiniband.cm.dreq.localcommid",
        "remote_comm_id": "infiniband.cm.dreq.remotecommid",
        "remote_qpn": "infiniband.cm.req.remoteqpneecn",  # sic: Wireshark's name
    },
    "DREP": {
        "local_comm_id": "infiniband.cm.drsp.localcommid",
        "remote_comm_id": "infiniband.cm.drsp.remotecommid",
    },
}

# The address fields of one IP version only are in a given REQ.
OPTIONAL = {"ip.src", "ip.dst", "ip.src6", "ip.dst6"}
# RoCEv2 over IPv6 sends UDP checksum 0, as Soft-RoCE does (test/data/rxe/README.md):
# Wireshark flags it, and that is the only expert info allowed.
IPV6_ZERO_CSUM = "Expert Info (Error/Checksum): Illegal checksum value (0)"

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def parse_listing(text):
    """cm_frames output: {frame: (attr, {field: value})}."""
    mads = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) < 3 or words[0] != "frame":
            continue
        if words[2] == "error":
            fail(f"uroce cannot decode frame {words[1]}: {line}")
            continue
        vals = dict(w.split("=", 1) for w in words[3:])
        if "service_id" in vals:
            sid = int(vals["service_id"], 0)
            vals["service_id.protocol"] = hex(sid >> 16 & 0xff)
            vals["service_id.port"] = hex(sid & 0xffff)
        mads[int(words[1])] = (words[2], vals)
    return mads


def same(ours, theirs):
    if ("." in ours or ":" in ours) and not ours.startswith("0x"):
        return ours == theirs  # an IP address
    try:
        return int(ours, 0) == int(theirs, 0)
    except ValueError:
        return False


def compare(pcap, mads):
    """Every field tshark dissects must hold uroce's value."""
    names = sorted(set(HDR.values()) | {t for m in FIELDS.values() for t in m.values()})
    cmd = ["tshark", "-r", pcap, "-T", "fields", "-E", "separator=|", "-E", "occurrence=f",
           "-e", "frame.number", "-e", "frame.protocols", "-e", "_ws.malformed",
           "-e", "_ws.expert"]
    for n in names:
        cmd += ["-e", n]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = {int(r[0]): r for r in (line.split("|") for line in out.splitlines())}
    text = subprocess.run(["tshark", "-r", pcap, "-V"], capture_output=True, text=True,
                          check=True).stdout
    frames = text.split("\nFrame ")
    compared = 0
    for frame, (attr, vals) in sorted(mads.items()):
        row = rows.get(frame)
        if not row:
            fail(f"{pcap} frame {frame}: tshark shows no such frame")
            continue
        protos, malformed, expert = row[1:4]
        got = dict(zip(names, row[4:]))
        v6 = protos.startswith("eth:ethertype:ipv6")
        if v6 and expert == IPV6_ZERO_CSUM:
            expert = ""
        if protos not in ("eth:ethertype:ip:udp:infiniband",
                          "eth:ethertype:ipv6:udp:infiniband") or malformed or expert:
            fail(f"{pcap} frame {frame} {attr}: tshark {protos!r} malformed={malformed!r} "
                 f"expert={expert!r}")
        if f"\n    {HEADINGS[attr]}" not in frames[frame - 1]:
            fail(f"{pcap} frame {frame}: tshark does not show {HEADINGS[attr]!r}")
        for ours, theirs in list(HDR.items()) + list(FIELDS.get(attr, {}).items()):
            if ours not in vals and ours in OPTIONAL:
                continue
            if ours not in vals:
                fail(f"{pcap} frame {frame} {attr}: uroce printed no {ours}")
            elif not same(vals[ours], got[theirs]):
                fail(f"{pcap} frame {frame} {attr}: {ours} uroce {vals[ours]}, "
                     f"tshark {theirs} {got[theirs]!r}")
            else:
                compared += 1
    return compared


def main():
    cm_frames, capdir, scratch = sys.argv[1:4]
    os.makedirs(scratch, exist_ok=True)

    ours = os.path.join(scratch, "cm-ours.pcap")
    out = subprocess.run([cm_frames, "write", ours], capture_output=True, text=True,
                         check=True).stdout
    mads = parse_listing(out)
    attrs = sorted({a for a, _ in mads.values()})
    if set(attrs) != set(HEADINGS):
        fail(f"cm_frames wrote {attrs}, expected {sorted(HEADINGS)}")
    n = compare(ours, mads)
    v6 = sum(1 for _, v in mads.values() if "ip.src6" in v)
    if not v6:
        fail(f"{ours}: no REQ over IPv6")
    pkts = rdpcap(ours)
    v4 = 0
    for i, p in enumerate(pkts, 1):
        b = p[BTH] if BTH in p else None
        if b is None or b.opcode != 0x64 or b.dqpn != 1 or b.pkey != 0xffff:
            fail(f"{ours} frame {i}: not a UD SEND Only to QP 1: {p.summary()}")
        elif IP in p:
            # scapy computes the ICRC over IPv4 only; uroce's own parser checks both below
            v4 += 1
            if not icrc_ok(p):
                fail(f"{ours} frame {i}: ICRC differs from scapy's")
    back = subprocess.run([cm_frames, "decode", ours], capture_output=True, text=True,
                          check=True).stdout
    if parse_listing(back) != mads:
        fail(f"{ours}: uroce's parser (ICRC included) and decoder do not give back what it wrote")
    print(f"{ours}: {len(mads)} MADs ({', '.join(attrs)}; IPv4 and IPv6), {n} fields as tshark "
          f"reads them, {v4} IPv4 ICRCs as scapy computes them, all parsed back")

    total = 0
    for name in sorted(os.listdir(capdir)):
        if not name.endswith(".pcap"):
            continue
        pcap = os.path.join(capdir, name)
        out = subprocess.run([cm_frames, "decode", pcap], capture_output=True, text=True,
                             check=True).stdout
        mads = parse_listing(out)
        if not mads:
            fail(f"{pcap}: no MADs")
        n = compare(pcap, mads)
        total += len(mads)
        print(f"{pcap}: {len(mads)} MADs, {n} fields as tshark reads them")
    if not total:
        fail(f"no captures in {capdir}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
