"""GRPO with TRL on a rule-rewarded task (written by a2rl's reference agent; the RL route).

Prompts are the train items' `prompt` fields as user messages (what the evaluator sends); the
reward is the task's own rule read from its description (a2rl.agents.reference_agent.recipe
.arith_reward: 1 for the right answer as the evaluator extracts it, +0.1 for one short line).
Sized in seconds like train_sft.py (`--max-seconds`: cosine over the wall clock, checkpoints
out/c1..cN evenly in time) or in steps (`--max-steps`, saved to out).
"""

import os
import time
import warnings
from typing import Any

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.trainer_callback import PrinterCallback
from trl import GRPOConfig, GRPOTrainer

from a2rl.agents.reference_agent.recipe import arith_reward
from a2rl.agents.reference_agent.train_sft import (
    LineProgress,
    base_parser,
    load_rows,
    timed_schedule,
    write_model,
)


def reward_fn(completions, answer, **kwargs):
    """TRL calls this with the batch's completions and every dataset column as keywords."""
    return arith_reward(completions, answer)


def main() -> None:
    warnings.filterwarnings("ignore", message=".*gradient_checkpointing.*", category=FutureWarning)
    ap = base_parser(lr=5e-6, max_steps=2)
    ap.add_argument("--num-generations", type=int, default=4)
    ap.add_argument("--prompts-per-step", type=int, default=2)
    ap.add_argument("--max-completion-length", type=int, default=16,
                    help="the evaluator's max_new_tokens: the policy is judged at that length")
    ap.add_argument("--temperature", type=float, default=0.9)
    args = ap.parse_args()

    rows = load_rows(args)
    args.examples = len(rows)  # recorded with the model (a2rl_train_args.json)
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
    if timed:
        optimizers, budget = timed_schedule(model, tokenizer, args, "grpo", "trl.GRPOTrainer",
                                            warmup_steps=1)
        callbacks.append(budget)
    trainer = GRPOTrainer(model=model, reward_funcs=reward_fn, args=config,
                          train_dataset=dataset, processing_class=tokenizer,
                          callbacks=callbacks, optimizers=optimizers)
    trainer.remove_callback(PrinterCallback)
    start = time.monotonic()
    trainer.train()
    print(f"GRPO: {trainer.state.global_step} steps in {time.monotonic() - start:.0f} s",
          flush=True)
    if not timed:
        write_model(model, tokenizer, args.out, args, trainer.state.global_step,
                    "grpo", "trl.GRPOTrainer")


if __name__ == "__main__":
    main()
