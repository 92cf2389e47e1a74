#!/bin/sh
# Mine: makes its case directory and a subdirectory unreadable and unwritable; cleanup must still remove them.
mkdir -p "$1/sub/deeper"
echo x > "$1/sub/deeper/f"
chmod 000 "$1/sub/deeper" "$1/sub"
chmod 000 "$1"
exit 3
