"""GRPO with TRL on a rule-rewarded task (written by a2rl's reference agent; the RL route).

Prompts are the train items' `prompt` fields as user messages (what the evaluator sends); the
reward is the task's own rule read from its description (a2rl.agents.reference_agent.recipe
.arith_reward: 1 for the right answer as the evaluator extracts it, +0.1 for one short line).
Sized in seconds like train_sft.py (`--max-seconds`: cosine over the wall clock, checkpoints
out/c1..cN evenly in time) or in steps (`--max-steps`, saved to out).
"""

import argparse
import json
import os
import time
import warnings
from typing import Any

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.trainer_callback import PrinterCallback
from trl import GRPOConfig, GRPOTrainer

from a2rl.agents.reference_agent.recipe import arith_reward, lr_factor
from a2rl.agents.reference_agent.train_sft import Clock, LineProgress, TimeBudget


def reward_fn(completions, answer, **kwargs):
    """TRL calls this with the batch's completions and every dataset column as keywords."""
    return arith_reward(completions, answer)


def main() -> None:
    warnings.filterwarnings("ignore", message=".*gradient_checkpointing.*", category=FutureWarning)
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--lr", type=float, default=5e-6)
    ap.add_argument("--max-steps", type=int, default=2)
    ap.add_argument("--max-seconds", type=float, default=0.0)
    ap.add_argument("--checkpoints", type=int, default=1)
    ap.add_argument("--num-generations", type=int, default=4)
    ap.add_argument("--prompts-per-step", type=int, default=2)
    ap.add_argument("--max-completion-length", type=int, default=16,
                    help="the evaluator's max_new_tokens: the policy is judged at that length")
    ap.add_argument("--temperature", type=float, default=0.9)
    ap.add_argument("--max-train", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(max(1, len(os.sched_getaffinity(0))))
    rows = [json.loads(line) for line in open(args.data)]
    if args.max_train:
        rows = rows[: args.max_train]
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": r["prompt"]}],
                                  "answer": str(r["answer"])} for r in rows])
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    timed = args.max_seconds > 0
    print(f"GRPO: {len(rows)} prompts, "
          f"{f'{args.max_seconds:.0f} s' if timed else f'{args.max_steps} steps'}, lr {args.lr}, "
          f"{args.prompts_per_step} prompts x {args.num_generations} completions a step",
          flush=True)
    config = GRPOConfig(
        output_dir=os.path.join(args.out, "trainer"),
        max_steps=10**6 if timed else args.max_steps,
        per_device_train_batch_size=args.prompts_per_step * args.num_generations,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        temperature=args.temperature,
        learning_rate=args.lr,
        beta=0.0,  # no reference model: half the memory and forward passes
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=args.seed,
        use_cpu=not torch.cuda.is_available(),
        bf16=torch.cuda.is_available(),
        disable_tqdm=True,
        dataloader_num_workers=0,
        gradient_checkpointing=False,
    )
    callbacks: list[Any] = [LineProgress(args.max_seconds if timed else None)]
    optimizers: tuple[Any, Any] = (None, None)
    saved: list = []

    def save(step):
        out = os.path.join(args.out, f"c{len(saved) + 1}")
        write_model(model, tokenizer, out, args, step)
        saved.append(out)

    if timed:
        clock = Clock()
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: lr_factor(step, clock.elapsed(), args.max_seconds,
                                              warmup_steps=1))
        optimizers = (optimizer, scheduler)
        callbacks.append(TimeBudget(clock, args.max_seconds, args.checkpoints, save))
    trainer = GRPOTrainer(model=model, reward_funcs=reward_fn, args=config,
                          train_dataset=dataset, processing_class=tokenizer,
                          callbacks=callbacks, optimizers=optimizers)
    trainer.remove_callback(PrinterCallback)
    start = time.monotonic()
    trainer.train()
    print(f"GRPO: {trainer.state.global_step} steps in {time.monotonic() - start:.0f} s",
          flush=True)
    if not timed:
        write_model(model, tokenizer, args.out, args, trainer.state.global_step)


def write_model(model, tokenizer, out, args, step):
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    with open(os.path.join(out, "a2rl_train_args.json"), "w") as fh:
        json.dump({**vars(args), "step": step, "method": "grpo", "library": "trl.GRPOTrainer"},
                  fh, indent=2)
    print(f"saved {out} (step {step})", flush=True)


if __name__ == "__main__":
    main()
