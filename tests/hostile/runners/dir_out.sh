#!/bin/sh
# Mine: an output that is a directory.
mkdir "$1/attention_out.npy"
exit 0
