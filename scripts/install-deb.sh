#!/bin/sh
# Installs the Debian packages named as arguments that are not installed yet (apt-get; quiet when nothing is
# missing). Used by the Makefile's deps rule and by proofs/Makefile.
# usage: scripts/install-deb.sh PKG...
missing=""
for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
# shellcheck disable=SC2086 # one word per package
(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing) \
    || { echo "error: could not install$missing" >&2; exit 1; }
