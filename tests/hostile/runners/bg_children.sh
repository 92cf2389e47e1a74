#!/bin/sh
# Row 6: background children, one escaping through setsid, one double-forked; all must be gone after the case.
(sleep 777 &)
setsid sleep 778 &
(setsid sh -c 'sleep 779 &' &)
exit 77
