#!/bin/sh
# Turns a per-case exec runner into a persistent one (docs/exec-protocol.md): one case directory per stdin line, one
# status line per case on stdout. test_iut_exec runs every exec script through persistent: with it.
[ "$FLASHREF_PROTOCOL" = persistent-1 ] || { echo "persist.sh: FLASHREF_PROTOCOL is '$FLASHREF_PROTOCOL'" >&2; exit 2; }
script="$1"
echo "persist.sh: junk on stdout before the first case"
while IFS= read -r dir; do
  sh "$script" "$dir" </dev/null
  rc=$?
  echo "flashref-status: $rc exit status $rc"
done
exit 0
