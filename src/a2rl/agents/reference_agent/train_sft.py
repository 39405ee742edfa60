"""Supervised fine-tuning with TRL on data/train.jsonl (written by a2rl's reference agent).

Training is sized in seconds when `--max-seconds` is given: the learning rate follows a cosine
over the wall clock (a2rl.agents.reference_agent.recipe.lr_factor) and checkpoints are saved at
evenly spaced times (`--checkpoints N`: out/c1 … out/cN, the last at the end), so a slower
machine gets fewer steps, not a schedule cut off at its peak. Otherwise `--max-steps` steps.

Each example becomes a conversational prompt/completion pair: the user message is the item's
`prompt` field (exactly what the evaluator sends), the assistant message is its `answer`. Rows
that carry `prompt_messages` (a whole conversation, e.g. one step of an interactive episode) and
`completion` are used as they are. TRL renders both with the model's chat template and puts the
loss on the completion only, so training sees the same format as evaluation.
"""

import argparse
import json
import os
import sys
import time
import warnings
from typing import Any

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from transformers.trainer_callback import PrinterCallback
from trl import SFTConfig, SFTTrainer


class LineProgress(TrainerCallback):
    """One line per logging step: readable in a transcript (a redrawn bar is not)."""

    def __init__(self, total_s=None):
        self.total_s = total_s

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.monotonic()

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            elapsed = time.monotonic() - self.start
            rate = elapsed / max(1, state.global_step)
            where = (f"{elapsed:.0f}/{self.total_s:.0f} s" if self.total_s
                     else f"/{state.max_steps}")
            print(f"step {state.global_step} {where}  loss {float(logs['loss']):.4f}  "
                  f"lr {float(logs.get('learning_rate', 0)):.2e}  {rate:.1f} s/step", flush=True)


class TimeBudget(TrainerCallback):
    """Stops training when the seconds are spent and saves the evenly spaced checkpoints
    (the decisions are recipe.TimeKeeper's)."""

    def __init__(self, clock, total_s, n_checkpoints, save):
        from a2rl.agents.reference_agent.recipe import TimeKeeper

        self.clock, self.save = clock, save
        self.keeper = TimeKeeper(total_s, n_checkpoints)

    def on_train_begin(self, args, state, control, **kwargs):
        self.clock.start = time.monotonic()  # tokenizing and loading are not training time

    def on_step_end(self, args, state, control, **kwargs):
        due, stop = self.keeper.after_step(self.clock.elapsed())
        for _ in range(due):
            self.save(state.global_step)
        if stop:
            control.should_training_stop = True
        return control

    def on_train_end(self, args, state, control, **kwargs):
        for _ in range(self.keeper.finish()):
            self.save(state.global_step)


class Clock:
    def __init__(self):
        self.start = None

    def elapsed(self):
        if self.start is None:
            self.start = time.monotonic()
        return time.monotonic() - self.start


def progress_callback(total_s=None) -> TrainerCallback:
    if sys.stdout.isatty() and not total_s:  # run by hand: a live Rich bar
        from trl.trainer.callbacks import RichProgressCallback

        return RichProgressCallback()
    return LineProgress(total_s)


def base_parser(*, lr: float, max_steps: int) -> argparse.ArgumentParser:
    """The options every training script of the reference agent shares (SFT and GRPO)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--lr", type=float, default=lr)
    ap.add_argument("--max-steps", type=int, default=max_steps)
    ap.add_argument("--max-train", type=int, default=0, help="0 = all rows")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=0.0,
                    help="size the run in seconds instead of steps (0 = use --max-steps)")
    ap.add_argument("--checkpoints", type=int, default=1,
                    help="with --max-seconds: checkpoints out/c1..cN saved evenly in time")
    return ap


def load_rows(args) -> list:
    """The JSON-lines training rows, cut to --max-train; torch uses every core it is given."""
    torch.set_num_threads(max(1, len(os.sched_getaffinity(0))))
    rows = [json.loads(line) for line in open(args.data)]
    return rows[: args.max_train] if args.max_train else rows


def timed_schedule(model, tokenizer, args, method: str, library: str, warmup_steps: int = 5):
    """With --max-seconds: AdamW with the wall-clock cosine (recipe.lr_factor) and the callback
    that stops on time and saves out/c1..cN evenly in time."""
    from a2rl.agents.reference_agent.recipe import lr_factor

    clock = Clock()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    # LambdaLR passes the step; the cosine runs over the wall clock (see lr_factor).
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_factor(step, clock.elapsed(), args.max_seconds,
                                          warmup_steps=warmup_steps))
    saved: list = []

    def save(step):
        out = os.path.join(args.out, f"c{len(saved) + 1}")
        write_model(model, tokenizer, out, args, step, method, library)
        saved.append(out)

    return (optimizer, scheduler), TimeBudget(clock, args.max_seconds, args.checkpoints, save)


def main() -> None:
    # transformers 5 renames gradient_checkpointing; TRL still sets the old name.
    warnings.filterwarnings("ignore", message=".*gradient_checkpointing.*", category=FutureWarning)
    ap = base_parser(lr=1e-4, max_steps=60)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--max-length", type=int, default=256)
    args = ap.parse_args()

    rows = load_rows(args)
    args.examples = len(rows)  # recorded with the model (a2rl_train_args.json)
    dataset = Dataset.from_list([
        {"prompt": r["prompt_messages"] if "prompt_messages" in r
         else [{"role": "user", "content": r["prompt"]}],
         "completion": [{"role": "assistant",
                         "content": r["completion"] if "prompt_messages" in r else r["answer"]}]}
        for r in rows
    ])
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    timed = args.max_seconds > 0
    size = f"{args.max_seconds:.0f} s" if timed else f"{args.max_steps} steps"
    print(f"SFT: {len(rows)} examples, {size}, lr {args.lr}, batch {args.batch_size}", flush=True)
    # Timed: an upper bound of steps the clock never reaches (the callback stops first).
    max_steps = 10**6 if timed else args.max_steps
    config = SFTConfig(
        output_dir=os.path.join(args.out, "trainer"),
        max_steps=max_steps,
        per_device_train_batch_size=args.batch_size,
        learning_rate=args.lr,
        lr_scheduler_type="cosine",
        warmup_steps=args.max_steps // 10,  # 0 for very short runs: step 1 must update
        logging_steps=10 if timed else max(1, args.max_steps // 10),
        save_strategy="no",
        report_to=[],
        seed=args.seed,
        max_length=args.max_length,
        gradient_checkpointing=False,  # a small model fits; checkpointing only costs time
        use_cpu=not torch.cuda.is_available(),
        bf16=torch.cuda.is_available(),
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    callbacks = [progress_callback(args.max_seconds if timed else None)]
    optimizers: tuple[Any, Any] = (None, None)
    if timed:
        optimizers, budget = timed_schedule(model, tokenizer, args, "sft", "trl.SFTTrainer")
        callbacks.append(budget)
    trainer = SFTTrainer(model=model, args=config, train_dataset=dataset,
                         processing_class=tokenizer, callbacks=callbacks, optimizers=optimizers)
    trainer.remove_callback(PrinterCallback)  # LineProgress already reports each log step
    trainer.train()
    if not timed:
        write_model(model, tokenizer, args.out, args, trainer.state.global_step,
                    "sft", "trl.SFTTrainer")


def write_model(model, tokenizer, out, args, step, method, library):
    """save_pretrained plus the arguments and step, which a2rl's analysis reads back."""
    model.save_pretrained(out)  # trained in place by the trainer
    tokenizer.save_pretrained(out)
    with open(os.path.join(out, "a2rl_train_args.json"), "w") as fh:
        json.dump({**vars(args), "step": step, "method": method, "library": library},
                  fh, indent=2)
    print(f"saved {out} (step {step})", flush=True)


if __name__ == "__main__":
    main()
