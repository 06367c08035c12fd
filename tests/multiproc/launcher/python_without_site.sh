#!/bin/sh
# Debian's Python without its site packages (-S): a real interpreter in which "import torch"
# fails, whatever is installed; tests set SPMD_PYTHON to this script.
exec /usr/bin/python3 -S "$@"
