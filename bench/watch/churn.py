# bench/watch/churn.py — a python3 service with heavy transient churn: every
# step it builds a buffer of 1 to 60 MiB (touched), holds it 0.2 to 2 s and
# drops it, so its private bytes swing by tens of MiB with no leak. With
# LEAK_KB_PER_S it also keeps that much a second (a slow steady leak).
# Prints "ready PID". Runs until killed. Not a test: bench/watch/run.sh.
import os, random, sys, time

leak_per_s = int(sys.argv[1]) if len(sys.argv) > 1 else 0
random.seed(1)
kept = []
print("ready", os.getpid(), flush=True)
last = time.time()
while True:
    buf = b"x" * (random.randint(1, 60) << 20)
    hold_until = time.time() + random.uniform(0.2, 2.0)
    while time.time() < hold_until:
        time.sleep(0.1)
        now = time.time()
        if leak_per_s:
            kept.append(b"y" * int(leak_per_s * 1024 * (now - last)))
        last = now
    del buf
