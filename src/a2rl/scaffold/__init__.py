"""The experience-driven scaffold (`--scaffold journal,skills,evaluator,plan-review,revision`):
optional aids around any agent stack, each recorded with the run and analysed."""
