"""Supervised fine-tuning with TRL on data/train.jsonl (written by a2rl's reference agent).

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

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from transformers.trainer_callback import PrinterCallback
from trl import SFTConfig, SFTTrainer


class LineProgress(TrainerCallback):
    """One line per logging step: readable in a transcript (a redrawn bar is not)."""

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.monotonic()

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            rate = (time.monotonic() - self.start) / max(1, state.global_step)
            print(f"step {state.global_step}/{state.max_steps}  loss {float(logs['loss']):.4f}  "
                  f"lr {float(logs.get('learning_rate', 0)):.2e}  {rate:.1f} s/step", flush=True)


def progress_callback() -> TrainerCallback:
    if sys.stdout.isatty():  # run by hand: a live Rich bar
        from trl.trainer.callbacks import RichProgressCallback

        return RichProgressCallback()
    return LineProgress()


def main() -> None:
    # transformers 5 renames gradient_checkpointing; TRL still sets the old name.
    warnings.filterwarnings("ignore", message=".*gradient_checkpointing.*", category=FutureWarning)
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--max-steps", type=int, default=60)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--max-train", type=int, default=0, help="0 = all rows")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-length", type=int, default=256)
    args = ap.parse_args()

    torch.set_num_threads(max(1, len(os.sched_getaffinity(0))))
    rows = [json.loads(line) for line in open(args.data)]
    if args.max_train:
        rows = rows[: args.max_train]
    dataset = Dataset.from_list([
        {"prompt": r["prompt_messages"] if "prompt_messages" in r
         else [{"role": "user", "content": r["prompt"]}],
         "completion": [{"role": "assistant",
                         "content": r["completion"] if "prompt_messages" in r else r["answer"]}]}
        for r in rows
    ])
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    print(f"SFT: {len(rows)} examples, {args.max_steps} steps, lr {args.lr}, "
          f"batch {args.batch_size}", flush=True)
    config = SFTConfig(
        output_dir=os.path.join(args.out, "trainer"),
        max_steps=args.max_steps,
        per_device_train_batch_size=args.batch_size,
        learning_rate=args.lr,
        lr_scheduler_type="cosine",
        warmup_steps=args.max_steps // 10,  # 0 for very short runs: step 1 must update
        logging_steps=max(1, args.max_steps // 10),
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
    trainer = SFTTrainer(model=model, args=config, train_dataset=dataset,
                         processing_class=tokenizer, callbacks=[progress_callback()])
    trainer.remove_callback(PrinterCallback)  # LineProgress already reports each log step
    trainer.train()
    model.save_pretrained(args.out)  # trained in place by the trainer
    tokenizer.save_pretrained(args.out)
    with open(os.path.join(args.out, "a2rl_train_args.json"), "w") as fh:
        json.dump({**vars(args), "method": "sft", "library": "trl.SFTTrainer"}, fh, indent=2)
    print(f"saved {args.out}", flush=True)


if __name__ == "__main__":
    main()
