#!/bin/sh
# A persistent runner that declares its capabilities under persistent-2 (docs/exec-protocol.md) and copies the
# outputs of FR_IUT_SRC like copy_outputs.sh. $1: the capability object to declare ("" none, "-" a malformed line).
case "$FLASHREF_PROTOCOL" in
  persistent-2)
    if [ "$1" = "-" ]; then echo "flashref-capabilities: {\"format\": 7"
    elif [ -n "$1" ]; then echo "flashref-capabilities: $1"; fi ;;
  persistent-1) ;;
  *) echo "caps.sh: FLASHREF_PROTOCOL is '$FLASHREF_PROTOCOL'" >&2; exit 2 ;;
esac
while IFS= read -r dir; do
  echo "flashref-status: 77 caps.sh judges nothing"
done
