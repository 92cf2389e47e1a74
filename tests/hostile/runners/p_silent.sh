#!/bin/sh
# Mine, persistent: closes stdout and never answers (the timeout must end it, its children too).
exec >&-
sleep 775 &
while IFS= read -r dir; do :; done
