dist_man_MANS += man/agentfs.1
