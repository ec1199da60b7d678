// SPDX-License-Identifier: MIT
//
// agentfs-csi: the Kubernetes CSI node plugin, on gRPC for C++ (Debian's
// libgrpc++). Only the protocol is here: options, the Identity and Node
// services turning requests into csi.h's calls and their codes into
// statuses, the socket, signals. Every decision and every mount is in C
// (csi/target.c, csi/publish.c), next to the rest of agentfs.
#include "csi.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "csi/csi.h"
#include "src/common/agentfs.h"
}

namespace {

const char usage[] =
	"usage: agentfs-csi --endpoint unix:///PATH --node-id NAME [--socket AGENTFSD_SOCKET]\n"
	"                   [--kubelet-dir DIR]\n"
	"\n"
	"The CSI node plugin of agentfs (driver " CSI_DRIVER_NAME "): publishes a bot's\n"
	"roots, or its socket, into pods' ephemeral inline volumes.\n"
	"\n"
	"  --endpoint unix:///PATH  the gRPC socket kubelet talks to\n"
	"  --node-id NAME           this node's name (NodeGetInfo)\n"
	"  --socket PATH            agentfsd's control socket (default /run/agentfs/agentfsd.sock)\n"
	"  --kubelet-dir DIR        targets must lie under it (default /var/lib/kubelet)\n";

struct csi_conf conf;
std::string node_id;

// Publish and unpublish one at a time: two calls for one target must not
// both see it empty and both mount.
std::mutex node_lock;

grpc::Status status(int code, const char *msg)
{
	return code == CSI_OK ? grpc::Status::OK
			      : grpc::Status(static_cast<grpc::StatusCode>(code), msg);
}

class Identity final : public csi::v1::Identity::Service {
	grpc::Status GetPluginInfo(grpc::ServerContext *, const csi::v1::GetPluginInfoRequest *,
				   csi::v1::GetPluginInfoResponse *res) override
	{
		res->set_name(CSI_DRIVER_NAME);
		res->set_vendor_version(PACKAGE_VERSION);
		return grpc::Status::OK;
	}

	// Node only: no controller service, no topology.
	grpc::Status GetPluginCapabilities(grpc::ServerContext *,
					   const csi::v1::GetPluginCapabilitiesRequest *,
					   csi::v1::GetPluginCapabilitiesResponse *) override
	{
		return grpc::Status::OK;
	}

	grpc::Status Probe(grpc::ServerContext *, const csi::v1::ProbeRequest *,
			   csi::v1::ProbeResponse *res) override
	{
		char msg[512] = "";
		int code = csi_probe(&conf, msg, sizeof msg);

		if (code != CSI_OK)
			return status(code == CSI_UNAVAILABLE ? CSI_FAILED_PRECONDITION : code, msg);
		res->mutable_ready()->set_value(true);
		return grpc::Status::OK;
	}
};

class Node final : public csi::v1::Node::Service {
	grpc::Status NodePublishVolume(grpc::ServerContext *,
				       const csi::v1::NodePublishVolumeRequest *req,
				       csi::v1::NodePublishVolumeResponse *) override
	{
		std::vector<struct csi_attr> attrs;
		struct csi_publish_req p = {};
		char msg[1024] = "";
		int code;

		for (const auto &kv : req->volume_context())
			attrs.push_back({kv.first.c_str(), kv.second.c_str()});
		p.volume_id = req->volume_id().c_str();
		p.target_path = req->target_path().c_str();
		p.readonly = req->readonly();
		p.has_capability = req->has_volume_capability();
		if (p.has_capability) {
			const auto &cap = req->volume_capability();
			const auto mode = cap.access_mode().mode();

			p.block = cap.has_block();
			p.nmount_flags = cap.has_mount() ? cap.mount().mount_flags_size() : 0;
			p.reader_only = mode == csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_READER_ONLY ||
					mode == csi::v1::VolumeCapability::AccessMode::MULTI_NODE_READER_ONLY;
		}
		p.attrs = attrs.data();
		p.nattrs = attrs.size();
		{
			std::lock_guard<std::mutex> hold(node_lock);
			code = csi_publish(&conf, &p, msg, sizeof msg);
		}
		if (code != CSI_OK)
			log_msg(LOG_WARNING, "publish %s at %s refused: %s", p.volume_id, p.target_path,
				msg);
		return status(code, msg);
	}

	grpc::Status NodeUnpublishVolume(grpc::ServerContext *,
					 const csi::v1::NodeUnpublishVolumeRequest *req,
					 csi::v1::NodeUnpublishVolumeResponse *) override
	{
		char msg[1024] = "";
		int code;

		{
			std::lock_guard<std::mutex> hold(node_lock);
			code = csi_unpublish(&conf, req->volume_id().c_str(),
					     req->target_path().c_str(), msg, sizeof msg);
		}
		if (code != CSI_OK)
			log_msg(LOG_WARNING, "unpublish %s at %s failed: %s",
				req->volume_id().c_str(), req->target_path().c_str(), msg);
		return status(code, msg);
	}

	// Neither staging nor stats nor expansion: publish and unpublish only.
	grpc::Status NodeGetCapabilities(grpc::ServerContext *,
					 const csi::v1::NodeGetCapabilitiesRequest *,
					 csi::v1::NodeGetCapabilitiesResponse *) override
	{
		return grpc::Status::OK;
	}

	grpc::Status NodeGetInfo(grpc::ServerContext *, const csi::v1::NodeGetInfoRequest *,
				 csi::v1::NodeGetInfoResponse *res) override
	{
		res->set_node_id(node_id);
		res->set_max_volumes_per_node(0);
		return grpc::Status::OK;
	}
};

[[noreturn]] void die_usage(const std::string &why)
{
	fprintf(stderr, "agentfs-csi: %s\n%s", why.c_str(), usage);
	exit(2);
}

// The endpoint's path: unix:///PATH (or unix:/PATH), absolute.
std::string endpoint_path(const char *ep)
{
	std::string s(ep);

	if (s.rfind("unix://", 0) == 0)
		s = s.substr(7);
	else if (s.rfind("unix:", 0) == 0)
		s = s.substr(5);
	else
		die_usage(std::string("--endpoint must be unix:///PATH, not ") + ep);
	if (s.empty() || s[0] != '/')
		die_usage(std::string("--endpoint must name an absolute path: ") + ep);
	return s;
}

// A socket left by an earlier run (kill -9) is replaced; anything else there is not.
void clear_endpoint(const std::string &path)
{
	struct stat st;

	if (lstat(path.c_str(), &st) != 0)
		return;
	if (!S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "agentfs-csi: %s exists and is not a socket: not replaced\n",
			path.c_str());
		exit(1);
	}
	unlink(path.c_str());
}

void parse_options(int argc, char **argv, std::string &endpoint)
{
	static const struct option longopts[] = {
		{"endpoint", required_argument, nullptr, 'e'},
		{"node-id", required_argument, nullptr, 'n'},
		{"socket", required_argument, nullptr, 's'},
		{"kubelet-dir", required_argument, nullptr, 'k'},
		{"help", no_argument, nullptr, 'h'},
		{"version", no_argument, nullptr, 'V'},
		{nullptr, 0, nullptr, 0},
	};
	static char *kubelet = nullptr, *sock = nullptr;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, nullptr)) != -1) {
		switch (c) {
		case 'e':
			endpoint = endpoint_path(optarg);
			break;
		case 'n':
			node_id = optarg;
			break;
		case 's':
			sock = optarg;
			break;
		case 'k':
			free(kubelet);
			if (path_normalise(optarg, &kubelet) != 0)
				die_usage(std::string("--kubelet-dir must be an absolute path, not ") + optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case 'V':
			printf("agentfs-csi %s (driver %s)\n", PACKAGE_VERSION, CSI_DRIVER_NAME);
			exit(0);
		default:
			die_usage(std::string("unknown option ") + argv[optind - 1]);
		}
	}
	if (optind < argc)
		die_usage(std::string("unexpected argument ") + argv[optind]);
	if (endpoint.empty() || node_id.empty())
		die_usage("--endpoint and --node-id are required");
	conf.socket = sock != nullptr ? sock : default_socket_path();
	conf.kubelet_dir = kubelet != nullptr ? kubelet : "/var/lib/kubelet";
}

} // namespace

int main(int argc, char **argv)
{
	std::string endpoint;
	Identity identity;
	Node node;
	sigset_t sigs;
	int sig = 0;

	log_set_name("agentfs-csi");
	log_open(nullptr, true, nullptr, nullptr, 0); // the foreground: standard error
	parse_options(argc, argv, endpoint);
	// Signals are taken by one thread (sigwait), never by gRPC's.
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
	signal(SIGPIPE, SIG_IGN);

	unsigned dropped = csi_sweep(&conf);
	log_msg(LOG_INFO, "at start: %u target%s whose pod is gone dropped", dropped,
		dropped == 1 ? "" : "s");

	clear_endpoint(endpoint);
	umask(077); // the endpoint is root's (kubelet's) only
	grpc::ServerBuilder builder;
	builder.AddListeningPort("unix://" + endpoint, grpc::InsecureServerCredentials());
	builder.RegisterService(&identity);
	builder.RegisterService(&node);
	std::unique_ptr<grpc::Server> server(builder.BuildAndStart());
	if (!server) {
		log_msg(LOG_ERR, "cannot listen on unix://%s", endpoint.c_str());
		return 1;
	}
	log_msg(LOG_INFO, "serving unix://%s for node %s (agentfsd at %s, kubelet folder %s)",
		endpoint.c_str(), node_id.c_str(), conf.socket, conf.kubelet_dir);
	std::thread stopper([&] {
		sigwait(&sigs, &sig);
		server->Shutdown();
	});
	server->Wait();
	stopper.join();
	unlink(endpoint.c_str());
	// Published volumes stay: they are the kernel's, and kubelet unpublishes them.
	log_msg(LOG_INFO, "stopped (signal %d); published volumes stay", sig);
	return 0;
}
