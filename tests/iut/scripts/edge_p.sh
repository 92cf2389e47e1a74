#!/bin/sh
# A persistent runner for test_iut_exec_edges that misbehaves as MODE says (usage: edge_p.sh MODE). Per case read:
#   long       status 1 with a 300-byte message and a line on stderr
#   stdout     a line on stdout, then status 2 "bad" (nothing on stderr)
#   nomsg      status 3 without a message          quiet77  status 77 without a reason, nothing on stderr
#   err77      status 77 with a reason and a line on stderr
#   huge       status 99999999999999999999999 (out of range: a malformed line)
#   echo1      the first case answered 77 with the echo of its directory, the next ones without it
#   crlf       status 77 with a message, trailing spaces and CR, and the echo of its directory followed by CR
#   die        a line on stdout, then exits 4 without a status line
#   silent     exits 4 at once, saying nothing (under any protocol)
#   nostdin    closes its stdin, then exits 0 after 0.5 s without a status line
#   capscut    under persistent-2 a capability line longer than 64 KiB
#   capslate   under persistent-2 answers 77, then writes a capability line before each later answer
mode=$1
n=0
case "$mode" in
  silent) exit 4 ;;
  nostdin) exec 0<&-; sleep 0.5; exit 0 ;;
  capscut) if [ "$FLASHREF_PROTOCOL" = persistent-2 ]; then
             printf 'flashref-capabilities: {"format":"flashref-capabilities/1","runner":"'
             head -c 70000 /dev/zero | tr '\0' 'x'; echo '"}'
           fi ;;
esac
while IFS= read -r dir; do
  n=$((n + 1))
  case "$mode" in
    long) echo "edge_p: long-marker on stderr" >&2
          printf 'flashref-status: 1 '; head -c 300 /dev/zero | tr '\0' 'm'; echo ;;
    stdout) echo "edge_p: stdout-marker"; echo "flashref-status: 2 bad" ;;
    nomsg) echo "flashref-status: 3" ;;
    quiet77) echo "flashref-status: 77" ;;
    err77) echo "edge_p: err77-marker" >&2; echo "flashref-status: 77 not this one" ;;
    huge) echo "flashref-status: 99999999999999999999999 too big" ;;
    echo1) if [ $n = 1 ]; then printf 'flashref-status: 77 first\t%s\n' "$dir"
           else echo "flashref-status: 77 later"; fi ;;
    crlf) printf 'flashref-status: 77 crlf-marker  \r\t%s\r\n' "$dir" ;;
    die) echo "edge_p: die-marker"; exit 4 ;;
    capslate) [ $n -gt 1 ] && echo 'flashref-capabilities: {"format":"flashref-capabilities/1","runner":"late"}'
              echo "flashref-status: 77 capslate" ;;
    *) echo "flashref-status: 77 default" ;;
  esac
done
