#!/usr/bin/env python3
"""SIGINT and SIGTERM during a suite (docs/reliability.md, "Interrupted runs").

flashref suite runs against an exec: and a persistent: runner that hangs in its first case; the test waits until the
case's temporary folder exists and the runner is running, sends the signal, and requires:
- flashref dies of that signal (the shell's 130 / 143) within 15 s;
- no process of the run left (every process the runner started carries a marker in its environment);
- TMPDIR empty (the temporary case folder removed);
- --json and --report absent (the run had judged nothing whole) or complete and valid, no temporary report file;
- --history exactly as before (its earlier line kept, nothing half-appended).

    check_signals.py FLASHREF
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from fault_procs import check, failures, marked_envs, summary

HISTORY = '{"time":"2026-01-01T00:00:00Z","impl":"other","set":"quick","seed":1,"overall":"PASS","results":{}}\n'


def one(flashref, sig, mode):
    name = f"{signal.Signals(sig).name} during a suite ({mode} runner)"
    bad = len(failures)
    root = tempfile.mkdtemp(prefix="flashref-sig-")
    try:
        tmp, out = os.path.join(root, "tmp"), os.path.join(root, "out")
        os.mkdir(tmp)
        os.mkdir(out)
        started = os.path.join(root, "started")
        mark = f"FR_SIGNAL_TEST_MARK={os.getpid()}-{sig}-{mode}"
        runner = os.path.join(root, "runner.sh")
        with open(runner, "w") as f:
            if mode == "exec":
                # One case: note it started, then hang in a child (the process tree must go too).
                f.write(f'touch "{started}"\nsleep 60 &\nwait\n')
            else:
                f.write(f'while read d; do touch "{started}"; sleep 60 & wait; done\n')
        with open(os.path.join(out, "history.jsonl"), "w") as f:
            f.write(HISTORY)
        env = dict(os.environ, TMPDIR=tmp)
        env[mark.split("=")[0]] = mark.split("=")[1]
        cmd = [flashref, "suite", "--impl", f'{mode}:sh {runner}', "--set", "quick", "--timeout", "120",
               "--json", os.path.join(out, "r.json"), "--report", os.path.join(out, "r.html"),
               "--history", os.path.join(out, "history.jsonl")]
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        t0 = time.monotonic()
        while not (os.path.exists(started) and os.listdir(tmp)) and p.poll() is None and time.monotonic() - t0 < 60:
            time.sleep(0.05)
        if p.poll() is not None or not os.path.exists(started):
            check(False, f"{name}: the runner never started its first case (exit {p.poll()}): "
                         f"{p.stdout.read().decode(errors='replace')[-2000:]}")
            p.kill()
            return
        time.sleep(0.3)
        p.send_signal(sig)
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            check(False, f"{name}: flashref still running 15 s after the signal")
        text = p.stdout.read().decode(errors="replace")
        check(p.returncode in (-sig, 128 + sig),
              f"{name}: exit {p.returncode}, want death by the signal (-{sig}) or {128 + sig}: {text[-1500:]}")
        left = []
        for _ in range(100):  # the runner's tree is killed at once; allow the kernel a moment to reap
            left = list(marked_envs(mark))
            if not left:
                break
            time.sleep(0.05)
        check(not left, f"{name}: processes of the run still alive: {left}")
        check(not os.listdir(tmp), f"{name}: left in TMPDIR: {os.listdir(tmp)}")
        names = sorted(os.listdir(out))
        check(all(n in ("r.json", "r.html", "history.jsonl") for n in names), f"{name}: stray files: {names}")
        if "r.json" in names:
            try:
                with open(os.path.join(out, "r.json")) as f:
                    json.load(f)
            except ValueError as e:
                check(False, f"{name}: r.json is not valid JSON: {e}")
        if "r.html" in names:
            with open(os.path.join(out, "r.html"), "rb") as f:
                check(f.read().rstrip().endswith(b"</html>"), f"{name}: r.html is cut short")
        with open(os.path.join(out, "history.jsonl")) as f:
            h = f.read()
        check(h == HISTORY or (h.startswith(HISTORY) and h.endswith("\n") and h.count("\n") == 2),
              f"{name}: history.jsonl lost or half-appended: {h!r}")
        if len(failures) == bad:
            print(f"ok   {name}: exit {p.returncode}, TMPDIR empty, reports {names}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    for sig in (signal.SIGINT, signal.SIGTERM):
        for mode in ("exec", "persistent"):
            one(sys.argv[1], sig, mode)
    return summary("check_signals")


if __name__ == "__main__":
    sys.exit(main())
