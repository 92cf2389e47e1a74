#!/bin/sh
# Issue 28 row 6: the runner dies of SIGSEGV (a native extension's crash): the case must FAIL `crash` naming the
# signal, not error-status "exit status 139" (the shell that starts it must not hide the signal).
kill -SEGV $$
