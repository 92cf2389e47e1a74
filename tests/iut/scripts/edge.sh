#!/bin/sh
# An exec runner for test_iut_exec_edges that misbehaves as MODE says (usage: edge.sh MODE CASE_DIR):
#   segv      dies by SIGSEGV            quiet3   exits 3 saying nothing     quiet77  exits 77 saying nothing
#   rmdir     removes its case directory, then exits 77
#   swapdir   renames its case directory away and puts another directory there, then exits 77
#   socket    binds a UNIX socket as attention_out.npy and exits 0 (an output that cannot be opened)
#   fail3     says why on stderr and exits 3
mode=$1; dir=$2
case "$mode" in
  segv) kill -SEGV $$ ;;
  quiet3) exit 3 ;;
  quiet77) exit 77 ;;
  rmdir) rm -rf "$dir"; exit 77 ;;
  swapdir) mv "$dir" "$dir-moved" && mkdir "$dir" && echo x > "$dir/left.txt"; exit 77 ;;
  socket) python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$dir/attention_out.npy"
          exit $? ;;
  fail3) echo "edge.sh: fail3-marker" >&2; exit 3 ;;
esac
echo "edge.sh: unknown mode '$mode'" >&2
exit 2
