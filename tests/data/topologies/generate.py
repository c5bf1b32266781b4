#!/usr/bin/env python3
"""Writes the shipped topology files. The JSON files are the source of truth
the tests read; this script only documents how they were made (run it from
this folder to regenerate them). Schema: docs/topology.md."""
import json


def pcie_box(name, nic_gbps, nic_layer="Ethernet"):
    """2-socket PCIe server: per socket one PCIe gen4 switch with 2 GPUs and 1 NIC."""
    nodes, links = [], []
    for s in range(2):
        nodes.append({"id": f"cpu{s}", "kind": "cpu", "name": "Xeon 8380", "numa": s, "package": s, "cores": 40})
        nodes.append({"id": f"sw{s}", "kind": "pci_switch", "numa": s, "bus_id": f"0000:{0x10 + 0x40 * s:02x}:00.0"})
        links.append({"a": f"cpu{s}", "b": f"sw{s}", "kind": "pci", "pci_gen": 4, "pci_width": 16})
        for g in (2 * s, 2 * s + 1):
            nodes.append({"id": f"gpu{g}", "kind": "gpu", "name": "NVIDIA A40", "numa": s,
                          "bus_id": f"0000:{0x11 + 0x40 * s + (g % 2):02x}:00.0", "cuda_dev": g, "sm": 86})
            links.append({"a": f"sw{s}", "b": f"gpu{g}", "kind": "pci", "pci_gen": 4, "pci_width": 16})
        nodes.append({"id": f"nic{s}", "kind": "nic", "numa": s, "bus_id": f"0000:{0x13 + 0x40 * s:02x}:00.0",
                      "netdev": f"ens{s + 1}np0", "ib_device": f"mlx5_{s}", "port": 1, "link_layer": nic_layer,
                      "speed_gbps": nic_gbps, "up": True,
                      "gids": [f"3 0000:0000:0000:0000:0000:ffff:0a00:{s:02x}{name[-1]}1 RoCE v2"]})
        links.append({"a": f"sw{s}", "b": f"nic{s}", "kind": "pci", "pci_gen": 4, "pci_width": 16})
    links.append({"a": "cpu0", "b": "cpu1", "kind": "smp", "bw": 20})
    return {"name": name, "nodes": nodes, "links": links}


def dgx():
    """8 A100-class GPUs on NVSwitch (12 NVLinks each), 4 PCIe gen4 switches
    each holding 2 GPUs and 2 200 Gb/s InfiniBand NICs, 2 sockets."""
    nodes, links = [], []
    for s in range(2):
        nodes.append({"id": f"cpu{s}", "kind": "cpu", "name": "AMD EPYC 7742", "numa": s, "package": s, "cores": 64})
    nodes.append({"id": "nvswitch0", "kind": "nvswitch"})
    for w in range(4):
        s = w // 2
        nodes.append({"id": f"sw{w}", "kind": "pci_switch", "numa": s, "bus_id": f"0000:{0x0f + 0x30 * w:02x}:00.0"})
        links.append({"a": f"cpu{s}", "b": f"sw{w}", "kind": "pci", "pci_gen": 4, "pci_width": 16})
        for k in (2 * w, 2 * w + 1):
            nodes.append({"id": f"gpu{k}", "kind": "gpu", "name": "NVIDIA A100-SXM4-80GB", "numa": s,
                          "bus_id": f"0000:{0x10 + 0x30 * w + 4 * (k % 2):02x}:00.0", "cuda_dev": k, "sm": 80})
            links.append({"a": f"sw{w}", "b": f"gpu{k}", "kind": "pci", "pci_gen": 4, "pci_width": 16})
            links.append({"a": f"gpu{k}", "b": "nvswitch0", "kind": "nvlink", "count": 12})
            nodes.append({"id": f"nic{k}", "kind": "nic", "numa": s,
                          "bus_id": f"0000:{0x12 + 0x30 * w + 4 * (k % 2):02x}:00.0", "netdev": f"ibp{k}s0",
                          "ib_device": f"mlx5_{k}", "port": 1, "link_layer": "InfiniBand", "speed_gbps": 200,
                          "up": True, "gids": [f"0 fe80:0000:0000:0000:0c42:a103:00{k:02x}:0001 IB/RoCE v1"]})
            links.append({"a": f"sw{w}", "b": f"nic{k}", "kind": "pci", "pci_gen": 4, "pci_width": 16})
    links.append({"a": "cpu0", "b": "cpu1", "kind": "smp", "bw": 20})
    return {"name": "dgx0", "nodes": nodes, "links": links}


def cpu_only():
    """A small VM like the CI machine: one NUMA node, 2 cores, one virtio NIC, lo."""
    return {"name": "vm", "nodes": [
        {"id": "cpu0", "kind": "cpu", "name": "AMD EPYC", "numa": 0, "package": 0, "cores": 2},
        {"id": "nic0", "kind": "nic", "numa": 0, "bus_id": "0000:00:03.0", "netdev": "eth0", "link_layer": "Ethernet",
         "speed_gbps": 10, "up": True, "addresses": ["inet 192.0.2.2"]},
        {"id": "nic1", "kind": "nic", "netdev": "lo", "link_layer": "Loopback", "up": True,
         "addresses": ["inet 127.0.0.1", "inet6 ::1"]},
    ], "links": [
        {"a": "cpu0", "b": "nic0", "kind": "pci", "bw": 12},
        {"a": "cpu0", "b": "nic1", "kind": "loc", "bw": 5000},
    ]}


def compact(v, indent=0):
    """JSON with each node and link on one line, like weft's own dumps."""
    pad = " " * (indent + 2)
    if isinstance(v, dict) and any(isinstance(x, (dict, list)) and x and isinstance(x, dict) or
                                   (isinstance(x, list) and any(isinstance(y, (dict, list)) for y in x))
                                   for x in v.values()):
        items = [pad + json.dumps(k) + ": " + compact(x, indent + 2) for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(v, list) and any(isinstance(y, (dict, list)) for y in v):
        return "[\n" + ",\n".join(pad + compact(x, indent + 2) for x in v) + "\n" + " " * indent + "]"
    return json.dumps(v)


def write(path, doc):
    with open(path, "w") as f:
        f.write(compact(doc) + "\n")


write("dgx-8gpu-nvswitch-8nic.json", {"weft_topology": 1, "hosts": [dgx()]})
write("pcie-2socket-4gpu-2nic.json", {"weft_topology": 1, "hosts": [pcie_box("box0", 100)]})
write("cpu-only-vm.json", {"weft_topology": 1, "hosts": [cpu_only()]})

# 4 hosts: box0..box2 behind a 100 Gb/s switch, box3 (40 Gb/s NICs) behind a
# 40 Gb/s switch; the two switches joined by a 400 Gb/s uplink.
hosts = [pcie_box(f"box{h}", 100 if h < 3 else 40) for h in range(4)]
net_links = []
for h in range(4):
    for s in range(2):
        net_links.append({"a": f"box{h}/nic{s}", "b": "net/leaf100" if h < 3 else "net/leaf40", "kind": "net"})
net_links.append({"a": "net/leaf100", "b": "net/leaf40", "kind": "net", "bw": 50})
write("cluster-4x-pcie-2socket-100g-40g.json", {
    "weft_topology": 1,
    "comment": "box0-2 on a 100 Gb/s leaf, box3 on a 40 Gb/s leaf, leaves joined at 400 Gb/s",
    "hosts": hosts,
    "network": {"switches": [{"id": "leaf100", "kind": "net_switch", "speed_gbps": 100},
                             {"id": "leaf40", "kind": "net_switch", "speed_gbps": 40}],
                "links": net_links}})
