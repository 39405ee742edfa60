"""The "Cost and provenance" section of summary.md: what the run spent (`RunRecord.cost`) and what
makes it reproducible (`RunRecord.provenance`)."""

from __future__ import annotations

from pathlib import Path

from a2rl.schema import RunCost, RunRecord

HEADING = "## Cost and provenance"
_TEXT_CAP = 200


def _code(text: str | None) -> str:
    """Text a2rl did not write (a CLI's version line, a provider's model id) as an inline code
    span: printable characters only, no backtick (it cannot end the span), capped."""
    if not text:
        return "—"
    clean = "".join(ch for ch in text if ch.isprintable() and ch != "`")[:_TEXT_CAP]
    return f"`{clean}`" if clean else "—"


def _num(value: float | None, fmt: str, unit: str = "") -> str:
    return "—" if value is None else f"{value:{fmt}}{unit}"


def _tokens(cost: RunCost) -> str:
    if cost.input_tokens is None and cost.output_tokens is None:
        return "not known (no usage in the agent's transcript)"
    return f"{cost.input_tokens or 0:,} in / {cost.output_tokens or 0:,} out"


def _usd(cost: RunCost) -> str:
    if cost.usd is None:
        if cost.input_tokens is None and cost.output_tokens is None:
            return "not known (no usage in the agent's transcript)"
        return "not known (the CLI reports no dollars and the driver is not in the price table)"
    source = {"cli": "the CLI's own total"}.get(cost.usd_source or "", cost.usd_source or "")
    return f"${cost.usd:.4f} ({source})" if source else f"${cost.usd:.4f}"


def render_cost(record: RunRecord) -> str:
    """The section's Markdown ("" when the record holds neither cost nor provenance)."""
    cost, prov = record.cost, record.provenance
    if cost is None and prov is None:
        return ""
    lines = ["", HEADING, ""]
    if cost is not None:
        gpu_use = cost.gpu_note or (
            f"mean utilisation {_num(cost.gpu_util_mean, '.1f', '%')}, peak memory "
            f"{_num(cost.gpu_mem_peak_mb, ',.0f', ' MiB')}")
        rss = _num(cost.peak_rss_mb, ",.0f", " MiB") + (
            f" ({cost.peak_rss_source})" if cost.peak_rss_source else "")
        disk = "—" if cost.disk_bytes is None else f"{cost.disk_bytes / 2**20:,.1f} MiB"
        lines += [f"- LLM tokens: {_tokens(cost)}",
                  f"- LLM spend: {_usd(cost)}",
                  f"- GPU-hours: {cost.gpu_hours:.3f} (agent {cost.agent_gpu_hours:.3f} on "
                  f"{cost.gpus} GPU(s); evaluations {cost.eval_gpu_hours:.3f})",
                  f"- GPU use while the agent ran: {gpu_use}",
                  f"- Peak memory of the agent's processes: {rss}",
                  f"- Run folder at the close: {disk}"]
    if prov is not None:
        lines += [f"- a2rl version: {_code(prov.a2rl_version)}",
                  f"- Agent CLI version (asked inside the sandbox): "
                  f"{_code(prov.agent_cli_version)}",
                  f"- Driver model as the provider reported it: {_code(prov.driver_model)}",
                  f"- Task data fingerprint (sha256): {_code(prov.task_data_sha256)}"]
    return "\n".join(lines) + "\n"


def append_cost(run_dir: Path, record: RunRecord) -> None:
    """Add the section to summary.md, just written (a live run's close, or `a2rl analyze`)."""
    path = run_dir / "summary.md"
    text = render_cost(record)
    if not text or not path.exists():
        return
    with path.open("a") as fh:
        fh.write(text)
