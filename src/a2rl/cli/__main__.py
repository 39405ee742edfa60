"""`python -m a2rl.cli`: the same as the `a2rl` command."""

from a2rl.cli import main

if __name__ == "__main__":
    main()
