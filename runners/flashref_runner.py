"""Helper for flashref runners written in Python: one file serves both protocols of docs/exec-protocol.md.

    from flashref_runner import serve, Unsupported

    CAPABILITIES = {"format": "flashref-capabilities/1", "ops": {"fwd": {"dtypes": ["fp32"]}}}   # optional

    def handle(case_dir):            # computes one case: reads case.json + inputs, writes the outputs there
        ...
        if unsupported: raise Unsupported("fp8 is not supported")   # SKIP, with the reason

    serve(handle, capabilities=CAPABILITIES)

Per case (`flashref suite --impl exec:"python3 my_runner.py"`): flashref runs `python3 my_runner.py CASE_DIR`;
serve() calls handle(CASE_DIR) and exits 0, 77 (Unsupported) or 1 (any other exception, traceback on stderr).

Persistent (`--impl persistent:"python3 my_runner.py"`): flashref starts the runner once with
FLASHREF_PROTOCOL=persistent-1 (or persistent-2) and writes one case directory per line to its stdin; serve()
answers each with `flashref-status: 0`, `flashref-status: 77 REASON` or `flashref-status: 1 ERROR` on the original
stdout, and returns when stdin is closed (exit status 0). The framework is imported once for the whole run. While
handle() runs, file descriptor 1 points at stderr, so whatever the framework prints cannot corrupt a status line.
With persistent-2 the first line on stdout, before any case is read, is `flashref-capabilities: {JSON}`: what the
runner declares it supports (docs/exec-protocol.md, "Runner capabilities (declared)"); `{}` when it declares nothing.

`python3 my_runner.py --capabilities` prints the same JSON object and exits 0.
"""

import json
import os
import sys
import traceback

STATUS_PREFIX = "flashref-status:"
CAPS_PREFIX = "flashref-capabilities:"
PROTOCOL = "persistent-1"
PROTOCOL_CAPS = "persistent-2"  # persistent-1 plus the capability line first
CAPS_FORMAT = "flashref-capabilities/1"


class Unsupported(Exception):
    """Raised by a handler for a case it does not support: reported as SKIP (exit status 77), never PASS."""


def _one_line(text):
    return " ".join(str(text).split())


def capabilities_line(capabilities):
    """The declaration as one line of compact JSON (no newline inside: json.dumps escapes control characters)."""
    caps = capabilities() if callable(capabilities) else capabilities
    return "%s %s" % (CAPS_PREFIX, json.dumps(caps or {}, sort_keys=True, separators=(",", ":"),
                                              allow_nan=False))


def _run(handle, case_dir):
    """Returns (code, message) for one case."""
    try:
        handle(case_dir)
        return 0, ""
    except Unsupported as e:
        return 77, _one_line(e) or "not supported"
    except Exception as e:  # the case fails; the runner goes on
        traceback.print_exc(file=sys.stderr)
        return 1, _one_line("%s: %s" % (type(e).__name__, e))


def _persistent(handle, caps_line):
    status = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8", errors="backslashreplace")
    os.dup2(2, 1)  # prints from the framework go to stderr from here on
    sys.stdout = sys.stderr
    if caps_line is not None:
        status.write(caps_line + "\n")
        status.flush()
    stdin = sys.stdin.buffer
    while True:
        raw = stdin.readline()
        if not raw:
            return 0
        case_dir = os.fsdecode(raw.rstrip(b"\n"))
        if not case_dir:
            continue
        code, msg = _run(handle, case_dir)
        sys.stderr.flush()
        status.write("%s %d%s\n" % (STATUS_PREFIX, code, " " + msg if msg else ""))
        status.flush()


def serve(handle, argv=None, capabilities=None):
    """Runs handle for one case (a directory argument) or for many (FLASHREF_PROTOCOL=persistent-1 or -2); with
    the single argument --capabilities prints the declaration (a dict, or a function returning one); exits."""
    proto = os.environ.get("FLASHREF_PROTOCOL")
    if proto in (PROTOCOL, PROTOCOL_CAPS):
        # The declaration is computed before the first case so that a broken one fails the start, not a case.
        sys.exit(_persistent(handle, capabilities_line(capabilities) if proto == PROTOCOL_CAPS else None))
    args = sys.argv[1:] if argv is None else argv
    if args == ["--capabilities"]:
        print(capabilities_line(capabilities)[len(CAPS_PREFIX) + 1:])
        sys.exit(0)
    if len(args) != 1:
        sys.stderr.write("usage: %s CASE_DIR   (or FLASHREF_PROTOCOL=%s with case directories on stdin; "
                         "--capabilities)\n" % (os.path.basename(sys.argv[0]), PROTOCOL))
        sys.exit(2)
    code, msg = _run(handle, args[0])
    if msg:
        sys.stderr.write(msg + "\n")
    sys.exit(code)
