"""What the fault scripts (check_signals.py, check_mpi_kill.py) share: the failure list with its check(), and the
live processes that carry a run's marker in their environment (how each script finds what its run left behind)."""
import os

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL " + what)


def marked_envs(mark):
    """{pid: environment entries} of the live (not zombie) processes whose environment holds the entry mark."""
    found = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{p}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if mark.encode() in env and state != b"Z":
            found[int(p)] = env
    return found
