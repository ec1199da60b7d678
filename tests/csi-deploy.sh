#!/bin/bash
# SPDX-License-Identifier: MIT
# csi-deploy: deploy/kubernetes/ parses (python3-yaml) and carries what
# agentfs-csi relies on: the CSIDriver's attachRequired false,
# podInfoOnMount true and Ephemeral volumes; the DaemonSet's four
# containers with the mount propagation each needs, privileges only where
# mounting needs them; no service account token; the example pod matching
# agentfs exec's guarantees, with a deny-all NetworkPolicy; an image built
# from Debian 12's packages.
PY=
for p in /usr/bin/python3 python3; do
	if "$p" -c 'import yaml' 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
	echo "1..0 # SKIP python3's yaml is missing (apt-get install python3-yaml)"
	exit 77
fi
exec "$PY" - "$top_srcdir/deploy/kubernetes" <<'PYEOF'
import os, sys, yaml

d = sys.argv[1]
n = 0
fails = 0
def ok(cond, what):
    global n, fails
    n += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (n, what))
    fails += not cond

docs = {}
for f in sorted(os.listdir(d)):
    if f.endswith(".yaml"):
        try:
            docs[f] = [x for x in yaml.safe_load_all(open(os.path.join(d, f))) if x]
            ok(True, "%s parses" % f)
        except yaml.YAMLError as e:
            ok(False, "%s parses: %s" % (f, e))
def kind(k):
    return [x for v in docs.values() for x in v if x.get("kind") == k]

drv = kind("CSIDriver")
ok(len(drv) == 1 and drv[0]["metadata"]["name"] == "csi.agentfs.local", "one CSIDriver, csi.agentfs.local")
spec = drv[0]["spec"] if drv else {}
ok(spec.get("attachRequired") is False, "attachRequired: false")
ok(spec.get("podInfoOnMount") is True, "podInfoOnMount: true (the plugin's authorization needs it)")
ok(spec.get("volumeLifecycleModes") == ["Ephemeral"], "volumeLifecycleModes: [Ephemeral]")

ds = kind("DaemonSet")
ok(len(ds) == 1, "one DaemonSet")
pod = ds[0]["spec"]["template"]["spec"] if ds else {}
cs = {c["name"]: c for c in pod.get("containers", [])}
ok(sorted(cs) == ["agentfs-csi", "agentfsd", "livenessprobe", "node-driver-registrar"],
   "its containers: agentfsd, agentfs-csi, node-driver-registrar, livenessprobe")
def mount(c, path):
    return next((m for m in cs.get(c, {}).get("volumeMounts", []) if m["mountPath"] == path), {})
ok(mount("agentfsd", "/var/lib/agentfs").get("mountPropagation") == "Bidirectional",
   "agentfsd's state (its FUSE mounts) propagates to the host")
ok(mount("agentfs-csi", "/var/lib/kubelet").get("mountPropagation") == "Bidirectional",
   "agentfs-csi's kubelet folder propagates to the host")
ok(mount("agentfs-csi", "/var/lib/agentfs").get("mountPropagation") == "HostToContainer",
   "agentfs-csi sees agentfsd's mounts, and sends none back there")
ok(any(m["mountPath"] == "/dev/fuse" for m in cs.get("agentfsd", {}).get("volumeMounts", [])),
   "agentfsd has /dev/fuse")
for c in ("node-driver-registrar", "livenessprobe"):
    sc = cs.get(c, {}).get("securityContext", {})
    ok(not sc.get("privileged") and sc.get("allowPrivilegeEscalation") is False and
       sc.get("capabilities", {}).get("drop") == ["ALL"] and sc.get("readOnlyRootFilesystem") is True,
       "%s: unprivileged, no capabilities, read-only root" % c)
    ok(not any(m.get("mountPropagation") for m in cs.get(c, {}).get("volumeMounts", [])),
       "%s: no mount propagation" % c)
ok(pod.get("automountServiceAccountToken") is False, "the DaemonSet mounts no service account token")
ok(not pod.get("hostNetwork") and not pod.get("hostPID"), "nor the host's network or pids")
sa = kind("ServiceAccount")
ok(len(sa) == 1 and sa[0].get("automountServiceAccountToken") is False, "its service account mounts no token")
ok(not kind("ClusterRoleBinding") and not kind("RoleBinding"), "and is bound to no role")

ex = [p for p in kind("Pod")]
ok(len(ex) == 1, "one example pod")
p = ex[0]["spec"] if ex else {}
psc = p.get("securityContext", {})
ok(psc.get("runAsNonRoot") is True and isinstance(psc.get("runAsUser"), int) and psc["runAsUser"] > 0,
   "the pod runs as a user, never root (the bot's)")
ok(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", "seccomp RuntimeDefault")
ok(p.get("automountServiceAccountToken") is False, "no service account token")
for c in p.get("containers", []):
    sc = c.get("securityContext", {})
    ok(sc.get("allowPrivilegeEscalation") is False, "%s: no privilege escalation" % c["name"])
    ok(sc.get("capabilities", {}).get("drop") == ["ALL"], "%s: every capability dropped" % c["name"])
    ok(sc.get("readOnlyRootFilesystem") is True, "%s: read-only root filesystem" % c["name"])
    tmp = [m for m in c.get("volumeMounts", []) if m["mountPath"] == "/tmp"]
    vols = {v["name"]: v for v in p.get("volumes", [])}
    ok(len(tmp) == 1 and "emptyDir" in vols.get(tmp[0]["name"], {}), "%s: /tmp is an emptyDir" % c["name"])
csiv = [v for v in p.get("volumes", []) if "csi" in v]
ok(csiv and all(v["csi"]["driver"] == "csi.agentfs.local" and "bot" in v["csi"].get("volumeAttributes", {})
                for v in csiv), "its csi volumes name the driver and a bot")
ok(any(v["csi"]["volumeAttributes"].get("socket") == "true" for v in csiv), "one is the bot's socket")
np_ = kind("NetworkPolicy")
ok(len(np_) == 1, "one NetworkPolicy")
nps = np_[0]["spec"] if np_ else {}
labels = ex[0]["metadata"].get("labels", {}) if ex else {}
ok(nps.get("podSelector", {}).get("matchLabels") and
   all(labels.get(k) == v for k, v in nps["podSelector"]["matchLabels"].items()), "it selects the example pod")
ok(sorted(nps.get("policyTypes", [])) == ["Egress", "Ingress"] and not nps.get("ingress") and not nps.get("egress"),
   "it denies all ingress and egress")

cf = open(os.path.join(d, "Containerfile")).read()
froms = [l.split()[1] for l in cf.splitlines() if l.startswith("FROM ")]
ok(froms and all(f == "debian:12" for f in froms), "the image builds from debian:12 only")
ok("--enable-csi" in cf and "apt-get install" in cf, "with Debian's packages and agentfs-csi")
print("1..%d" % n)
sys.exit(0)
PYEOF
