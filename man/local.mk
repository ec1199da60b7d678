# SPDX-License-Identifier: MIT
dist_man_MANS += man/agentfs.1 man/agentfsd.8 man/agentfs-protocol.7
