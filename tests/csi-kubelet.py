#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Play kubelet (and the sidecars) against agentfs-csi: one CSI call per run.

    csi-kubelet.py ENDPOINT CALL [ARGS...]

CALL is info, plugin-caps, probe, node-caps, node-info, an unknown one
(stage: NodeStageVolume, which the plugin does not serve), or

    publish VOLUME_ID TARGET [--ro] [--mode MODE] [--block] [--flag F]
            [--no-cap] [KEY=VALUE...]
    unpublish VOLUME_ID TARGET

It prints the gRPC status code's name (OK, PERMISSION_DENIED, ...) on the
first line, then the status message or the reply as JSON. The CSI messages
come from csi/csi.proto, compiled by grpc_tools into $CSI_PY_DIR.
"""
import json
import os
import sys

from google.protobuf import json_format
import grpc
from grpc_tools import protoc

top = os.environ.get("top_srcdir", os.path.join(os.path.dirname(__file__), ".."))
gen = os.environ["CSI_PY_DIR"]
if not os.path.exists(os.path.join(gen, "csi_pb2_grpc.py")):
    inc = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    if protoc.main(["protoc", "-I" + os.path.join(top, "csi"), "-I" + inc,
                    "--python_out=" + gen, "--grpc_python_out=" + gen,
                    os.path.join(top, "csi", "csi.proto")]) != 0:
        sys.exit("protoc failed on csi/csi.proto")
sys.path.insert(0, gen)
import csi_pb2  # noqa: E402
import csi_pb2_grpc  # noqa: E402


def publish_request(args):
    req = csi_pb2.NodePublishVolumeRequest(volume_id=args[0], target_path=args[1])
    cap = csi_pb2.VolumeCapability()
    cap.mount.SetInParent()
    cap.access_mode.mode = csi_pb2.VolumeCapability.AccessMode.SINGLE_NODE_WRITER
    with_cap = True
    rest = args[2:]
    while rest:
        a = rest.pop(0)
        if a == "--ro":
            req.readonly = True
        elif a == "--mode":
            cap.access_mode.mode = csi_pb2.VolumeCapability.AccessMode.Mode.Value(rest.pop(0))
        elif a == "--block":
            cap.block.SetInParent()
        elif a == "--flag":
            cap.mount.mount_flags.append(rest.pop(0))
        elif a == "--no-cap":
            with_cap = False
        else:
            k, _, v = a.partition("=")
            req.volume_context[k] = v
    if with_cap:
        req.volume_capability.CopyFrom(cap)
    return req


def main():
    endpoint, call, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    chan = grpc.insecure_channel("unix://" + endpoint)
    ident = csi_pb2_grpc.IdentityStub(chan)
    node = csi_pb2_grpc.NodeStub(chan)
    calls = {
        "info": lambda: ident.GetPluginInfo(csi_pb2.GetPluginInfoRequest()),
        "plugin-caps": lambda: ident.GetPluginCapabilities(
            csi_pb2.GetPluginCapabilitiesRequest()),
        "probe": lambda: ident.Probe(csi_pb2.ProbeRequest()),
        "node-caps": lambda: node.NodeGetCapabilities(csi_pb2.NodeGetCapabilitiesRequest()),
        "node-info": lambda: node.NodeGetInfo(csi_pb2.NodeGetInfoRequest()),
        "publish": lambda: node.NodePublishVolume(publish_request(args)),
        "unpublish": lambda: node.NodeUnpublishVolume(csi_pb2.NodeUnpublishVolumeRequest(
            volume_id=args[0], target_path=args[1])),
        # A call of the full protocol this plugin leaves out.
        "stage": lambda: chan.unary_unary(
            "/csi.v1.Node/NodeStageVolume",
            request_serializer=lambda m: b"",
            response_deserializer=lambda b: b)(None),
    }
    try:
        reply = calls[call]()
    except grpc.RpcError as e:
        print(e.code().name)
        print(e.details())
        return
    print("OK")
    if isinstance(reply, bytes):
        print("{}")
    else:
        print(json.dumps(json_format.MessageToDict(
            reply, preserving_proto_field_name=True, including_default_value_fields=True)))


main()
