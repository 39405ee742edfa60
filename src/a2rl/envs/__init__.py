"""Interactive environments (L3): the Env interface and the lockstep rollout engine."""

from a2rl.envs._compare import same_steps
from a2rl.envs._env import Env, Episode, Step, StepResult, Trajectory
from a2rl.envs._rollout import FinishFn, ParseFn, PromptFn, RolloutConfig, run_rollouts

__all__ = ["Env", "Episode", "FinishFn", "ParseFn", "PromptFn", "RolloutConfig", "Step",
           "StepResult", "Trajectory", "run_rollouts", "same_steps"]
