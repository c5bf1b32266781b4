#!/usr/bin/env python3
"""Writes the simulator's cluster files (run from this folder). The motivating
cluster: 64 hosts x 8 A100 (NVSwitch, 12 NVLinks each), one 40 Gb/s RoCE NIC
per GPU (rails) to the rack's top-of-rack switch, 8 hosts per rack, each
top-of-rack switch joined to the spine by 8 x 100 Gb/s (one link of 100 GB/s:
320 GB/s of NICs beneath it, 3.2:1 oversubscribed). Variants: one host, one
host's NICs falling back to TCP, every host's. Schema: docs/simulator.md."""
import json

GPUS, HOSTS_PER_RACK = 8, 8
# RoCE over TCP: the nccl-tests busbw of the story went from 13.8 to 40 GB/s
# when the fallback was fixed, about a third; TCP adds tens of microseconds.
TCP_FRACTION, TCP_LATENCY_US = 0.35, 25


def host(h):
    nodes = [{"id": "cpu0", "kind": "cpu", "name": "AMD EPYC 7742", "numa": 0, "package": 0, "cores": 64},
             {"id": "nvswitch0", "kind": "nvswitch"}]
    links = []
    for g in range(GPUS):
        nodes.append({"id": f"gpu{g}", "kind": "gpu", "name": "NVIDIA A100-SXM4-40GB", "numa": 0, "cuda_dev": g,
                      "sm": 80})
        nodes.append({"id": f"nic{g}", "kind": "nic", "numa": 0, "netdev": f"ens{g}np0", "ib_device": f"mlx5_{g}",
                      "port": 1, "link_layer": "Ethernet", "speed_gbps": 40, "up": True})
        links.append({"a": f"gpu{g}", "b": "nvswitch0", "kind": "nvlink", "count": 12})
        links.append({"a": "cpu0", "b": f"gpu{g}", "kind": "pci", "pci_gen": 4, "pci_width": 16})
        links.append({"a": "cpu0", "b": f"nic{g}", "kind": "pci", "pci_gen": 4, "pci_width": 16})
    return {"name": f"node{h:02d}", "nodes": nodes, "links": links}


def cluster(hosts, degraded=None):
    racks = (hosts + HOSTS_PER_RACK - 1) // HOSTS_PER_RACK
    switches = [{"id": "spine", "kind": "net_switch"}] + [{"id": f"tor{r}", "kind": "net_switch"} for r in range(racks)]
    links = [{"a": f"net/tor{r}", "b": "net/spine", "kind": "net", "bw": 100.0} for r in range(racks)]
    for h in range(hosts):
        links += [{"a": f"node{h:02d}/nic{g}", "b": f"net/tor{h // HOSTS_PER_RACK}", "kind": "net"}
                  for g in range(GPUS)]
    sim = {"step_us": 1, "intra_latency_us": 0.6, "net_hop_latency_us": 1.5}
    if degraded:
        sim["degraded"] = [{"host": degraded, "fraction": TCP_FRACTION, "latency_us": TCP_LATENCY_US}]
    doc = {"weft_topology": 1,
           "comment": "64 x 8 A100 over RoCE, 40 Gb/s NICs, 8 hosts per rack, 100 GB/s rack uplinks; made by generate.py",
           "hosts": [host(h) for h in range(hosts)],
           "network": {"switches": switches, "links": links},
           "simulation": sim}
    return doc


def write(name, doc):
    with open(name, "w") as f:
        # One host, one node or one link per line: readable and diffable.
        f.write(json.dumps(doc, indent=None, separators=(",", ":")).replace('{"name":"node', '\n{"name":"node')
                .replace(',{"a":', ',\n {"a":') + "\n")


write("a100-1x8.json", cluster(1))
write("a100-64x8-roce.json", cluster(64))
write("a100-64x8-roce-one-tcp.json", cluster(64, "node17"))
write("a100-64x8-roce-all-tcp.json", cluster(64, "*"))
