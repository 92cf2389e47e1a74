"""What the fault scripts (check_signals.py, check_mpi_kill.py) share: the failure list with its check() and summary(), and the
live processes that carry a run's marker in their environment (how each script finds what its run left behind)."""
import os

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL " + what)


def summary(script):
    """The script's exit status: 1 after "SCRIPT: N failure(s)", else 0 after "SCRIPT: all passed"."""
    if failures:
        print(f"{script}: {len(failures)} failure(s)")
        return 1
    print(f"{script}: all passed")
    return 0


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
