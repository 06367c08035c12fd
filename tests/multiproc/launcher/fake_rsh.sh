#!/bin/sh
# A stand-in for ssh in head-node tests: "fake_rsh.sh HOST COMMAND" runs COMMAND here, with
# a shell, as ssh would on HOST.
shift
exec sh -c "$*"
