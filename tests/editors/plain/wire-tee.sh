#!/bin/sh
# Stands in for the agentls binary in the editors' configurations and keeps a wire trace: what
# the editor sent (wire-in.log) and what the server answered (wire-out.log), in
# $AGENTLS_WIRE_DIR. The real binary is $AGENTLS_WIRE_BIN; the arguments are passed on.
tee "$AGENTLS_WIRE_DIR/wire-in.log" | "$AGENTLS_WIRE_BIN" "$@" | tee "$AGENTLS_WIRE_DIR/wire-out.log"
