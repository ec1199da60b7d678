# SPDX-License-Identifier: MIT
# csi: agentfs-csi, the Kubernetes CSI node plugin (C++ gRPC server over
# the C in csi/*.c). Built only when configure found gRPC for C++
# (--enable-csi=auto, the default; see configure.ac).
EXTRA_DIST += csi/csi.proto man/agentfs-csi.8
if BUILD_CSI
sbin_PROGRAMS += csi/agentfs-csi
dist_man_MANS += man/agentfs-csi.8
csi_agentfs_csi_SOURCES = csi/main.cc csi/csi.h csi/csi-int.h csi/afsd.c csi/target.c \
	csi/publish.c
nodist_csi_agentfs_csi_SOURCES = $(CSI_GEN)
csi_agentfs_csi_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)/csi
csi_agentfs_csi_CFLAGS = $(AM_CFLAGS) $(CJSON_CFLAGS)
csi_agentfs_csi_CXXFLAGS = $(WARN_CXXFLAGS) $(SAN_CFLAGS) $(PTHREAD_CFLAGS) $(GRPCPP_CFLAGS) \
	$(CJSON_CFLAGS)
csi_agentfs_csi_LDADD = src/libagentfs-common.a fusefs/libfusefs.a gitguard/libgitguard.a \
	$(GRPCPP_LIBS) $(CJSON_LIBS) $(FUSE_LIBS) $(GIT2_LIBS)

# The protocol's C++, made from csi/csi.proto by protoc and gRPC's plugin;
# one stamp, so a parallel make runs protoc once.
CSI_GEN = csi/csi.pb.cc csi/csi.pb.h csi/csi.grpc.pb.cc csi/csi.grpc.pb.h
BUILT_SOURCES += $(CSI_GEN)
CLEANFILES += $(CSI_GEN) csi/csi-proto.stamp
$(CSI_GEN): csi/csi-proto.stamp
	@test -f $@ || { rm -f csi/csi-proto.stamp; $(MAKE) $(AM_MAKEFLAGS) csi/csi-proto.stamp; }
csi/csi-proto.stamp: $(srcdir)/csi/csi.proto
	$(AM_V_GEN)$(MKDIR_P) csi && \
	$(PROTOC) -I$(srcdir)/csi --cpp_out=csi --grpc_out=csi \
		--plugin=protoc-gen-grpc=$(GRPC_CPP_PLUGIN) $(srcdir)/csi/csi.proto && \
	touch $@
endif
