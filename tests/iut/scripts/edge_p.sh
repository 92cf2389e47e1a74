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
#   capsblank  under persistent-2 a capability line of blanks      capscr  a valid one ending in spaces and CR
#   capsagain  under persistent-2 declares at every start; answers the first case 77, exits at the second (the count
#              in $FR_EDGE_COUNT)
#   early_tab  a status line with an echo before reading anything
#   tabcr      an echo of nothing but CR              samelen  an echo of another directory of the same length
#   stuck      answers the first case 77, then closes its stdin and stays (until killed)
#   repro      under persistent-2 declares a repro hook; `edge_p.sh repro --repro DIR OUT` dies by SIGSEGV
#   capsincase under persistent-2 answers a case with a malformed capability line
#   novariant  under persistent-2 declares variants but not which one it runs
mode=$1
n=0
caps='{"format":"flashref-capabilities/1","runner":"edge_p"'
case "$mode" in
  repro) [ "$2" = --repro ] && kill -SEGV $$
         [ "$FLASHREF_PROTOCOL" = persistent-2 ] && echo "flashref-capabilities: $caps,\"repro\":true}" ;;
  novariant) [ "$FLASHREF_PROTOCOL" = persistent-2 ] && echo "flashref-capabilities: $caps,\"variants\":[\"a\",\"b\"]}" ;;
  capsblank) [ "$FLASHREF_PROTOCOL" = persistent-2 ] && echo "flashref-capabilities:      " ;;
  capscr) [ "$FLASHREF_PROTOCOL" = persistent-2 ] && printf 'flashref-capabilities: %s}  \r\n' "$caps" ;;
  capsagain) [ "$FLASHREF_PROTOCOL" = persistent-2 ] && echo "flashref-capabilities: $caps}"
             n=$(cat "$FR_EDGE_COUNT" 2>/dev/null || echo 0) ;;
  early_tab) printf 'flashref-status: 0\tnowhere\n' ;;
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
    capsincase) [ "$FLASHREF_PROTOCOL" = persistent-2 ] && echo 'flashref-capabilities: {"format":7}'
                echo "flashref-status: 77 capsincase" ;;
    capsagain) echo $n > "$FR_EDGE_COUNT"; [ $n = 2 ] && exit 0; echo "flashref-status: 77 capsagain $n" ;;
    stuck) echo "flashref-status: 77 stuck"; exec 0<&-; exec sleep 30 ;;
    tabcr) printf 'flashref-status: 77 x\t\r\n' ;;
    samelen) last=${dir#"${dir%?}"}; other=Z; [ "$last" = Z ] && other=Y
             printf 'flashref-status: 77 x\t%s%s\n' "${dir%?}" "$other" ;;
    capslate) [ $n -gt 1 ] && echo 'flashref-capabilities: {"format":"flashref-capabilities/1","runner":"late"}'
              echo "flashref-status: 77 capslate" ;;
    *) echo "flashref-status: 77 default" ;;
  esac
done
