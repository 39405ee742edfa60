"""`python -m a2rl.sweep._child JOB.json`: the cell's own process (see `_cell`). A module of its
own so that running it does not re-execute a module the package has already imported."""

import sys

from a2rl.sweep._cell import main

if __name__ == "__main__":
    sys.exit(main())
