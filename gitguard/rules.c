/* SPDX-License-Identifier: MIT */
/*
 * The rule table's codes and reasons, as the log and the man page name them
 * (man/agentfs.1, WHAT IS PROTECTED), and the verdict a refusal fills.
 */
#include <errno.h>
#include <stdio.h>

#include "gitguard/guard-int.h"

static const struct {
	const char *name;
	const char *reason;
} rules[GUARD_RULE_MAX] = {
	[GUARD_RULE_NONE] = {"-", "allowed"},
	[GUARD_RULE_G1] = {"G1", "new .git"},
	[GUARD_RULE_G2] = {"G2", "new bare-shaped folder"},
	[GUARD_RULE_G3] = {"G3", "git folder or a folder above one"},
	[GUARD_RULE_D1] = {"D1", "config"},
	[GUARD_RULE_D2] = {"D2", "config.worktree"},
	[GUARD_RULE_D3] = {"D3", "hooks"},
	[GUARD_RULE_D4] = {"D4", "commondir"},
	[GUARD_RULE_D5] = {"D5", "worktrees"},
	[GUARD_RULE_D6] = {"D6", "modules"},
	[GUARD_RULE_D7] = {"D7", "alternates"},
	[GUARD_RULE_D8] = {"D8", "remotes/branches"},
	[GUARD_RULE_D9] = {"D9", "symlink in a git folder"},
	[GUARD_RULE_D10] = {"D10", "rr-cache"},
	[GUARD_RULE_D11] = {"D11", "autostash"},
	[GUARD_RULE_W1] = {"W1", ".git file"},
	[GUARD_RULE_W2] = {"W2", "core.hooksPath or init.templateDir target"},
	[GUARD_RULE_W3] = {"W3", "config include target"},
	[GUARD_RULE_X1] = {"X1", "symlink into a git folder"},
	[GUARD_RULE_X2] = {"X2", "index: made only by a checked rename"},
	[GUARD_RULE_X3] = {"X3", "git folder with an unsafe config"},
	[GUARD_RULE_X4] = {"X4", "rebase or sequencer strategy file"},
	[GUARD_RULE_HL] = {"HL", "another name of a protected file"},
	[GUARD_RULE_H1] = {"H1", "a person's git configuration"},
	[GUARD_RULE_R1] = {"R1", "a ref naming a file that is no ref"},
	[GUARD_RULE_D12] = {"D12", "a name git does not keep in a git folder"},
	[GUARD_RULE_D13] = {"D13", "another worktree's own files"},
	[GUARD_RULE_X5] = {"X5", "options git hands to another command"},
	[GUARD_RULE_LK] = {"LK", "a git lock file this mount did not make: another git holds it"},
	[GUARD_RULE_X6] = {"X6", "an exec line in a rebase's todo"},
	[GUARD_RULE_X7] = {"X7", "a rebase's step count that is no number"},
	[GUARD_RULE_X8] = {"X8", "a symlink where git's tools write or move a file"},
	[GUARD_RULE_RO_MOUNT] = {"read-only mount", "read-only mount"},
	[GUARD_RULE_RO_PATH] = {"read-only path", "read-only path"},
};

const char *guard_rule_name(unsigned rule)
{
	return rule < GUARD_RULE_MAX && rules[rule].name ? rules[rule].name : "?";
}

const char *guard_rule_reason(unsigned rule)
{
	return rule < GUARD_RULE_MAX && rules[rule].reason ? rules[rule].reason : "?";
}

/* A refusal by RULE, with its usual reason */
int guard_refuse(struct guard_verdict *v, unsigned rule)
{
	if (v) {
		v->rule = guard_rule_name(rule);
		v->reason = guard_rule_reason(rule);
		v->code = rule;
	}
	return -EROFS;
}

int guard_refuse_why(struct guard_verdict *v, unsigned rule, const char *reason)
{
	if (v) {
		v->rule = guard_rule_name(rule);
		v->reason = reason;
		v->code = rule;
	}
	return -EROFS;
}

const char *guard_verdict_text(const struct guard_verdict *v, char *buf, size_t sz)
{
	if (v->code == GUARD_RULE_RO_MOUNT || v->code == GUARD_RULE_RO_PATH)
		snprintf(buf, sz, "%s", guard_rule_name(v->code));
	else
		snprintf(buf, sz, "rule %s (%s)%s", v->rule ? v->rule : "?",
			 v->reason ? v->reason : "protected",
			 v->code == GUARD_RULE_G1 || v->code == GUARD_RULE_G2
				 ? "; new repositories are refused here: clone into /tmp, or allow "
				   "them (agentfs mount --allow-new-repos, or a bot's allow_new_repos)"
				 : "");
	return buf;
}
