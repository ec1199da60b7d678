#!/bin/sh
# SPDX-License-Identifier: MIT
# Run one TAP test script for automake's TAP driver. A test that cannot run
# here (no root, no /dev/fuse, no valgrind...) prints "1..0 # SKIP why" and
# exits 77; the driver counts the plan as a skip but would call the status
# an error, so 77 is passed on as 0. Any other status is kept.
bash "$@"
rc=$?
[ "$rc" -eq 77 ] && exit 0
exit "$rc"
