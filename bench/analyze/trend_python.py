# bench/analyze/trend_python.py — the review of --trend (session 39): a leak, a
# cache, churn and a fast grower whose stacks all pass through
# PyByteArray_Resize, run by trend-python.sh under PYTHONMALLOC=malloc.
#   leak:  bytearray(200) kept in a list, ~100 a second  (bytearray___init__)
#   churn: bytearray(8192) freed at once, 20 an iteration (bytearray___init__)
#   cache: 2000 entries of 8 KiB filled in the first ~2 s, then replaced (bytearray_iconcat)
#   fast:  one bytearray extended by 2000 B an iteration  (bytearray_iconcat: the cache's stack)
import sys, time
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 1.5)  # snapshots enabled meanwhile
leak, cache, big = [], {}, bytearray()
i, t0 = 0, time.time()
while time.time() - t0 < float(sys.argv[1]):
    leak.append(bytearray(200))
    for k in range(10):
        c = bytearray(); c += b"c" * 8192; cache[(i * 10 + k) % 2000] = c
    for k in range(20):
        t = bytearray(8192); del t
    big += b"g" * 2000
    i += 1
    time.sleep(0.01)
