#!/bin/sh
# Mine: kills the process that started it (the supervisor), then keeps a child running.
sleep 776 &
kill -9 $PPID
sleep 1
exit 0
