"""a2rl plug-ins from a package of their own, one module each, found through entry points
(pyproject.toml): `sandbox` (the `testjail` backend), `agent` (`testplugin-agent`), `task`
(`testplugin-upper`) and `extension` (`testplugin-stamp`). Importing this package registers
nothing: a2rl loads each module when it resolves that plug-in's name."""
