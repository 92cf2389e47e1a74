#!/bin/sh
# Mine: an output that is a symbolic link to a file outside the case directory (must not be read).
ln -s "$FR_HOSTILE_OUTSIDE/secret.npy" "$1/attention_out.npy"
exit 0
