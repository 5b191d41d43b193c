# bench/agent/imports.py [AGENT] — ms per import of a C extension module (one
# dlopen each) in python3, with the heap agent dlopen'ed first (dormant) or
# not: what the late agent's sweep after each dlopen costs. Run by run.sh.
import ctypes, os, sys, time
if len(sys.argv) > 1: ctypes.CDLL(sys.argv[1], os.RTLD_NOW)
names = ["_ssl", "_hashlib", "_sqlite3", "_decimal", "_json", "_pickle", "_datetime", "_socket", "select", "_struct", "array", "math", "cmath", "_bisect", "_heapq", "_random", "_csv", "_lzma", "_bz2", "zlib", "binascii", "unicodedata", "_elementtree", "pyexpat", "_asyncio", "_queue", "_posixsubprocess", "mmap", "_multiprocessing"]
t = time.perf_counter()
for n in names: __import__(n)
print("%.2f" % ((time.perf_counter() - t) * 1000 / len(names)))
