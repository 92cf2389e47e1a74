# Shell helpers of the hostile corpus (sourced).

# mknpy FILE DESCR SHAPE DATA_BYTES: a version 1.0 .npy header for DESCR and SHAPE (a Python tuple, e.g. "(3, 3)"),
# followed by DATA_BYTES zero bytes made with truncate (sparse: a 4 GB file costs no disk).
mknpy() {
    dict="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
    len=$((${#dict} + 1))
    total=$(( (10 + len + 63) / 64 * 64 ))
    hl=$((total - 10))
    pad=$((hl - len))
    lo=$((hl % 256)); hi=$((hl / 256))
    {
        printf '\223NUMPY\001\000'
        printf "\\$(printf %o $lo)\\$(printf %o $hi)"
        printf '%s' "$dict"
        printf "%${pad}s" ''
        printf '\n'
    } > "$1"
    truncate -s $((total + $4)) "$1"
}
