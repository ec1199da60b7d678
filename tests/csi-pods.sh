#!/bin/bash
# SPDX-License-Identifier: MIT
# csi-pods: a bot's pods (the Kubernetes pods, NAMESPACE/SERVICEACCOUNT,
# that may have its roots through agentfs-csi): set by the operator only,
# checked by Kubernetes's naming rules, kept across a SIGKILL, never copied
# by a fork, and the one thing exec_plan's pod check decides from.
. "$top_srcdir/tests/daemon-lib.sh"

mkdir -p "$T/a/sub" "$T/b"
daemon_from_copies # exec_plan of a confined bot names agentfs-enter
daemon_start || bail_out "agentfsd did not start"

r=$(afs --json create --user 65534 A "$T/a" --pod team-1/agent --pod team-1/agent --pod ops/ci.bot)
expect_ok "the operator creates A with two pods (one given twice)" "$r"
is "$(printf '%s' "$r" | jget bot.pods.0)" \
	team-1/agent "A's first pod"
is "$(printf '%s' "$r" | jget bot.pods.1)" ops/ci.bot "A's second pod, the repeat dropped"
is "$(printf '%s' "$r" | jget bot.pods.2)" "" "no third pod"
like "$(afs show A)" 'pods +team-1/agent ops/ci\.bot' "agentfs show lists the pods"
is "$(afs --json ls | jget bots.0.pods.0)" team-1/agent "list carries the pods"

# --- what a pod name may be -------------------------------------------------
for bad in nons /sa ns/ 'ns/sa/x' 'NS/sa' 'ns/Sa' '-ns/sa' 'ns-/sa' 'ns/sa-' 'ns/.sa' \
	'ns/sa..x' 'ns/s a' "$(printf 'n%.0s' {1..64})/sa" "ns/$(printf 's%.0s' {1..254})"; do
	expect_error "pod \"${bad:0:40}\" is refused" bad_value \
		"$(raw "{\"op\":\"configure\",\"name\":\"A\",\"pods\":[\"$bad\"]}")"
done
expect_error "a pod that is not a string" bad_type \
	"$(raw '{"op":"configure","name":"A","pods":[5]}')"
expect_error "pods that is not an array" bad_type \
	"$(raw '{"op":"configure","name":"A","pods":"ns/sa"}')"
expect_error "a pod holding a NUL" bad_value \
	"$(raw '{"op":"configure","name":"A","pods":["ns/sa\u0000x"]}')"
expect_error "65 pods" limit \
	"$(raw "{\"op\":\"configure\",\"name\":\"A\",\"pods\":[$(for i in $(seq 65); do printf '"ns/sa%d",' "$i"; done)\"ns/x\"]}")"
is "$(afs --json show A | jget bot.pods.1)" ops/ci.bot "a refused configure changed no pod"

# --- only the operator names pods -----------------------------------------
expect_error "A may not create a child with pods" forbidden \
	"$(as A create c1 "$T/a/sub" --pod team-1/agent)"
expect_ok "A creates a child without pods" "$(as A create c1 "$T/a/sub")"
expect_error "A may not give its child pods" forbidden \
	"$(as A configure c1 --pod team-1/agent)"
expect_error "A may not fork itself with pods" forbidden "$(as A fork A c2 --pod team-1/agent)"
r=$(as A fork A c2)
expect_ok "A forks itself" "$r"
is "$(printf '%s' "$r" | jget bot.pods.0)" "" "the fork has none of A's pods"
r=$(afs --json fork A A2)
is "$(printf '%s' "$r" | jget bot.pods.0)" "" "an operator's fork has none of A's pods either"
expect_ok "the operator may give A's child a pod" "$(afs --json configure c1 --pod team-1/child)"

# --- exec_plan's pod check, the decision agentfs-csi asks for ---------------
r=$(raw '{"op":"exec_plan","name":"A","pod":"team-1/agent"}')
expect_ok "exec_plan for a listed pod" "$r"
is "$(printf '%s' "$r" | jget binds.0.path)" "$T/a" "its plan binds A's folder"
r=$(raw '{"op":"exec_plan","name":"A","pod":"team-1/agentx"}')
expect_error "exec_plan for an unlisted pod" forbidden "$r"
like "$(printf '%s' "$r" | jget error.message)" 'pod team-1/agentx is not one of bot A.s pods' \
	"the refusal names the pod and the bot"
expect_error "exec_plan for a pod of another namespace" forbidden \
	"$(raw '{"op":"exec_plan","name":"A","pod":"team-2/agent"}')"
r=$(raw '{"op":"exec_plan","name":"B0","pod":"team-1/agent"}')
expect_error "exec_plan for an unknown bot" not_found "$r"
expect_error "exec_plan with a malformed pod" bad_value \
	"$(raw '{"op":"exec_plan","name":"A","pod":"team-1"}')"
expect_ok "the operator creates B with no pods" "$(afs --json create --user 65534 B "$T/b")"
r=$(raw '{"op":"exec_plan","name":"B","pod":"team-1/agent"}')
expect_error "exec_plan for a bot that names no pods" forbidden "$r"
like "$(printf '%s' "$r" | jget error.message)" 'names no pods: .agentfs configure B --pod' \
	"the refusal says how to name one"
expect_ok "exec_plan without a pod is as before" "$(raw '{"op":"exec_plan","name":"B"}')"
expect_error "a bot asking for a pod its child lacks" forbidden \
	"$(AGENT_SOCKET="$D_SOCK.d/A.sock" "$DCLIENT" req "$D_SOCK.d/A.sock" \
		'{"op":"exec_plan","name":"c1","pod":"team-1/agent"}')"

# --- kept across a restart; cleared on request --------------------------------
daemon_kill9 || bail_out "agentfsd did not die"
daemon_start || bail_out "agentfsd did not start again"
is "$(afs --json show A | jget bot.pods.1)" ops/ci.bot "the pods are kept across SIGKILL"
is "$(afs --json show c1 | jget bot.pods.0)" team-1/child "so are a child's"
r=$(afs --json configure A --no-pods)
expect_ok "configure --no-pods" "$r"
is "$(printf '%s' "$r" | jget bot.pods.0)" "" "A has no pods left"
expect_error "and its former pod is refused" forbidden \
	"$(raw '{"op":"exec_plan","name":"A","pod":"team-1/agent"}')"

done_testing
