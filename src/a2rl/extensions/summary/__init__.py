"""The live summary: summary.jsonl and summary.md written as each submission finishes, and the
run-level analysis (analysis.json, the overview of summary.md) when the run closes
(`a2rl.analysis.LiveSummary`)."""
