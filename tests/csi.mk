# SPDX-License-Identifier: MIT
# tests/csi.mk: agentfs-csi, the Kubernetes CSI node plugin, and what it
# needs of agentfsd (a bot's pods). csi-pods needs only the daemon; the
# plugin's tests skip (77) when it is not built or python3's grpc is missing.
CSI_TESTS = \
	tests/csi-pods.sh \
	tests/csi-node.sh \
	tests/csi-deploy.sh
TESTS += $(CSI_TESTS)
EXTRA_DIST += $(CSI_TESTS) tests/csi-kubelet.py deploy
