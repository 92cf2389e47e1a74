#!/usr/bin/env python3
"""An MPI rank killed mid-run (docs/reliability.md, "Interrupted runs").

`mpirun -n 3 flashref run CASE --engine golden --out OUT` on a case whose outputs take a while to write, twice:
- early (loading the case, computing): rank 1 is killed (SIGKILL) once it has read 1 MB of the case (it is past
  MPI's start-up: a rank killed inside MPI_Init can leave mpirun itself hanging in its PMIx connection handler after
  every rank is gone, "PMIX ERROR: UNREACHABLE", Open MPI's own race, seen on a machine at load 14 with a kill 0.2 s
  after the ranks were up);
- during the writing: as soon as rank 0 has laid out the output files, rank 0 is stopped (SIGSTOP: it holds the
  others at the barrier with the files laid out but not written) and rank 1 is killed.
Each time mpirun must exit with a failure status within 30 s, naming the killed rank or its signal; no rank may
outlive it; and OUT must hold no output file (the ranks mpirun ends with SIGTERM remove the files they laid out).

    check_mpi_kill.py FLASHREF MPIEXEC      (exit 77: SKIP, loudly, when MPI cannot run here)
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from fault_procs import check, failures, marked_envs, summary


def ranks(mark):
    """{rank: pid} of the live processes whose environment holds mark."""
    found = {}
    for pid, env in marked_envs(mark).items():
        for e in env:
            if e.startswith(b"OMPI_COMM_WORLD_RANK="):
                found[int(e.split(b"=")[1])] = pid
    return found


def read_bytes(pid):
    """Bytes pid has read through read() and its kind (/proc/PID/io rchar); 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/io") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))
    except (OSError, StopIteration, ValueError):
        return 0


def outputs(out):
    return sorted(n for n in os.listdir(out) if n.endswith(".npy")) if os.path.isdir(out) else []


def one(flashref, mpiexec, case, root, phase, attempt):
    name = f"rank killed during the {phase} (attempt {attempt})"
    bad = len(failures)
    out = os.path.join(root, f"out-{phase}-{attempt}")
    mark = f"FR_MPI_KILL_MARK={os.getpid()}-{phase}-{attempt}"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
    env[mark.split("=")[0]] = mark.split("=")[1]
    p = subprocess.Popen([mpiexec, "--oversubscribe", "-n", "3", flashref, "run", case, "--engine", "golden",
                          "--out", out], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    t0 = time.monotonic()
    pids = {}
    while len(pids) < 3 and p.poll() is None and time.monotonic() - t0 < 60:
        pids = ranks(mark)
        time.sleep(0.01)
    if len(pids) < 3:
        p.kill()
        text = p.communicate()[0].decode(errors="replace")
        check(False, f"{name}: the three ranks never ran (mpirun exit {p.returncode}): {text[-1500:]}")
        return True
    if phase == "computation":
        while read_bytes(pids[1]) < (1 << 20) and p.poll() is None and time.monotonic() - t0 < 120:
            time.sleep(0.001)
        if p.poll() is not None:
            p.communicate()
            return False  # finished before it could be killed: try again
    else:
        while not outputs(out) and p.poll() is None and time.monotonic() - t0 < 120:
            time.sleep(0.001)
        if p.poll() is not None:
            p.communicate()
            return False  # finished before it could be stopped: try again
        os.kill(pids[0], signal.SIGSTOP)
    os.kill(pids[1], signal.SIGKILL)
    t1 = time.monotonic()
    try:
        text = p.communicate(timeout=30)[0].decode(errors="replace")
    except subprocess.TimeoutExpired:
        p.kill()
        text = p.communicate()[0].decode(errors="replace")
        check(False, f"{name}: mpirun still running 30 s after rank 1 was killed")
    took = time.monotonic() - t1
    check(p.returncode != 0, f"{name}: mpirun exit status 0 after a rank was killed")
    check("signal 9" in text or "Killed" in text or "rank 1" in text,
          f"{name}: the output does not say which rank died or how: {text[-1500:]}")
    left = ranks(mark)
    for _ in range(200):
        if not left:
            break
        time.sleep(0.05)
        left = ranks(mark)
    for pid in left.values():  # never leave a stopped rank behind, whatever the verdict
        os.kill(pid, signal.SIGKILL)
    check(not left, f"{name}: ranks {sorted(left)} outlived mpirun")
    check(not outputs(out), f"{name}: output files left: {outputs(out)}")
    if len(failures) == bad:
        print(f"ok   {name}: mpirun exit {p.returncode} {took:.1f} s after the kill, no output left")
    return True


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    flashref, mpiexec = sys.argv[1], sys.argv[2]
    root = tempfile.mkdtemp(prefix="flashref-mpikill-")
    try:
        # Outputs of about 100 MB for a second of computation: the writing takes long enough to be caught.
        r = subprocess.run([flashref, "golden", "--out", root, "--name", "big", "--layout", "BNSD", "--dtype", "fp32",
                            "--B", "1", "--N1", "2", "--S1", "49152", "--S2", "8", "--D", "256", "--no-outputs"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            print("FAIL cannot write the case: " + r.stdout.decode(errors="replace"))
            return 1
        case = os.path.join(root, "big")
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        probe = subprocess.run([mpiexec, "--oversubscribe", "-n", "2", "true"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=60)
        if probe.returncode != 0:
            print("SKIP: mpirun cannot start processes here: " + probe.stdout.decode(errors="replace")[-500:])
            return 77
        for attempt in range(1, 4):
            if one(flashref, mpiexec, case, root, "computation", attempt):
                break
        else:
            check(False, "the run finished three times before its computation could be interrupted")
        for attempt in range(1, 4):
            if one(flashref, mpiexec, case, root, "writing", attempt):
                break
        else:
            check(False, "the run finished three times before its writing could be interrupted")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return summary("check_mpi_kill")


if __name__ == "__main__":
    sys.exit(main())
