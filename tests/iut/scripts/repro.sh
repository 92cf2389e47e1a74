#!/bin/sh
# A persistent runner with a repro hook and variants (docs/exec-protocol.md, "Runner capabilities"): under
# persistent-2 it declares "repro": true and its variant $1 among fp32 / fp16 ("odd": declares fp16, which is then not
# a word of its command), and answers 77 to every case. `repro.sh VARIANT ... --repro CASE_DIR OUT` writes OUT naming
# the case and the variant; a CASE_DIR ending in /decline exits 77, /crash exits 3 with a message on stderr, /hang
# never ends.
variant=$1
while [ $# -gt 0 ] && [ "$1" != --repro ]; do shift; done
if [ "$1" = --repro ]; then
  case "$2" in
    */decline) echo "repro.sh: not this case" >&2; exit 77 ;;
    */crash) echo "repro.sh: broke on $2" >&2; exit 3 ;;
    */hang) exec sleep 600 ;;
  esac
  printf 'case %s\nvariant %s\n' "$2" "$variant" >"$3" || exit 1
  exit 0
fi
[ "$variant" = odd ] && variant=fp16
case "$FLASHREF_PROTOCOL" in
  persistent-2) echo "flashref-capabilities: {\"format\":\"flashref-capabilities/1\",\"runner\":\"repro.sh\",\"variant\":\"$variant\",\"variants\":[\"fp32\",\"fp16\"],\"repro\":true}" ;;
esac
while IFS= read -r dir; do
  echo "flashref-status: 77 repro.sh judges nothing"
done
