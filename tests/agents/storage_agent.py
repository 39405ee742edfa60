"""An agent that exhausts the filesystem its workspace lies on, which is also the run
directory's: FILL=inodes creates empty files until none can be created, FILL=bytes writes one
file until no byte is left. It then prints a marker and exits."""

import os
import sys

what = sys.argv[1]
os.makedirs("fill", exist_ok=True)
n = 0
try:
    if what == "inodes":
        while True:
            open(f"fill/{n}", "w").close()
            n += 1
    else:
        with open("fill/blob", "wb") as fh:
            while True:
                fh.write(b"\1" * 65536)
                fh.flush()
                n += 1
except OSError as exc:
    print(f"FILLED {what} after {n}: {exc}", flush=True)
