"""The programs `a2rl.tasks._lib.code_exec` starts: the solution's launcher (`candidate`) and the
trusted judge server (`judge`), each preceded by the plain-data codec both sides share
(`codec`). They are read as text and run with `python -I -c` (`code_exec.program_source`): the
solution's sandbox does not show a2rl, and the judge runs the standard library only. Their
imports of each other's names are for type checkers only (the concatenated program defines
them)."""
