"""What training code optimises, read from the shape of its loss and the names around it: a
chosen/rejected log-sigmoid is preference optimisation, a KL to a teacher's distribution is
distillation, sampled generations (or advantages) scored by a reward are policy-gradient RL.
A name a class or loss claims counts only when the code bears it out."""

from __future__ import annotations

import ast
import re

from a2rl.analysis._methods import DISTILLATION, PREFERENCE, RL, method_of_loss, primary_method
from a2rl.analysis._syntax import identifiers, name_chain

GROUP_NAME = re.compile(r"(group|grpo|num_generations|n_samples_per_prompt|rollout_n)", re.I)
TEACHER_NAME = re.compile(r"teacher", re.I)
PAIR_NAME = re.compile(r"(chosen|reject|accept)", re.I)
"""The two sides of a preference pair (`chosen_logps`, `r_rejected`, `r_accept`)."""
REWARD_NAME = re.compile(r"reward", re.I)
ADVANTAGE_NAME = re.compile(r"advantage", re.I)


_TEACHER_VALUE = re.compile(r"logit|logp|log_?prob|prob|out|dist|token|ids$|hidden|score|loss|kl|"
                            r"text|answer|sample|label|target|temp|coef|weight|alpha|beta|ratio", re.I)
"""What a teacher-named value is when it is not a model (`teacher_logits`, `teacher_temp`)."""
_COPIES = {"deepcopy", "copy", "clone"}
_SAMPLING = {"generate", "sample", "rollout"}


def external_teacher(tree: ast.AST) -> bool:
    """The code holds a teacher model apart from the model it trains: a teacher-named model (not
    its logits or outputs) built by a call (`from_pretrained`, a framework's `Actor(path)`),
    named by a constant, or given as a parameter. A copy of the trained model (`deepcopy`, an
    EMA of its weights) or another name for it is no teacher model of its own."""
    def model_name(name: str | None) -> bool:
        return name is not None and bool(TEACHER_NAME.search(name)) and not _TEACHER_VALUE.search(name)

    def itself(value: ast.expr) -> bool:
        if isinstance(value, ast.Name | ast.Attribute):
            return not TEACHER_NAME.search(name_chain(value)[-1])  # `teacher = model`
        return any(isinstance(c, ast.Call) and (name_chain(c.func) or [""])[-1] in _COPIES
                   for c in ast.walk(value))

    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and model_name(node.arg):
            return True
        if isinstance(node, ast.keyword) and model_name(node.arg) and not itself(node.value):
            return True
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = [(name_chain(t) or [""])[-1] for t in targets]
            if any(model_name(n) for n in named) and not itself(node.value):
                return True
    return False


def self_taught(tree: ast.AST) -> bool:
    """On-policy self-distillation: the code samples from the model it trains and has no teacher
    model of its own, so whatever it calls a teacher is the model itself (with a demonstration in
    view, an earlier snapshot, its adapter switched off). Its targets are its own samples: no
    distillation."""
    return bool(_SAMPLING & identifiers(tree)) and not external_teacher(tree)


def clipped_ratio(node: ast.AST) -> bool:
    """A probability ratio clipped to [1 - eps, 1 + eps] (`torch.clamp(ratio, 1 - eps, 1 + eps)`,
    `ratio.clamp(…)`, the ratio an `exp` of log-probability differences or named so): the
    surrogate objective of PPO and of GRPO."""
    ids = identifiers(node)
    if "exp" not in ids and not any("ratio" in i.lower() for i in ids):
        return False
    def bound(expr: ast.expr, op: type) -> bool:
        return isinstance(expr, ast.BinOp) and isinstance(expr.op, op) and \
            isinstance(expr.left, ast.Constant) and expr.left.value == 1

    for call in ast.walk(node):
        if isinstance(call, ast.Call) and name_chain(call.func)[-1:] in (["clamp"], ["clip"], ["clamp_"]):
            given = list(call.args) + [kw.value for kw in call.keywords]
            if any(bound(a, ast.Sub) for a in given) and any(bound(a, ast.Add) for a in given):
                return True
    return False


def _clipped_policy_gradient(node: ast.AST, ids: set[str]) -> tuple[str, str] | None:
    """PPO's clipped surrogate; GRPO's when the code works on groups of samples."""
    if clipped_ratio(node):
        if any(GROUP_NAME.search(i) for i in ids):
            return "GRPO", "a clipped probability ratio over groups of samples"
        return "PPO", "a clipped probability ratio"
    return None


def loss_shape_method(cls: ast.ClassDef, *, self_distilled: bool = False) -> str | None:
    """A supervised trainer subclass whose own loss says otherwise: `compute_loss` on chosen /
    rejected log-probabilities through a log-sigmoid is DPO-style preference optimisation; a
    KL to a teacher's distribution is distillation (unless `self_distilled`: the teacher is the
    model itself, on its own samples); a pairwise margin of scalar scores is a reward model."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name in ("compute_loss", "training_step"):
            ids = identifiers(node)
            lowered = {i.lower() for i in ids}
            pairs = sum(1 for i in lowered if PAIR_NAME.search(i))
            if pairs >= 2 and log_sigmoid(lowered):
                # DPO compares the policy's sequence log-probabilities with a reference's; a
                # margin of scalar scores (a one-output head) is a reward model.
                logps = any("logp" in i or "logprob" in i or "ref" in i for i in lowered)
                return "DPO" if logps else "reward model"
            if any("teacher" in i for i in lowered) and {"kl_div", "log_softmax"} & lowered and \
                    not self_distilled:
                return "distillation"
    return None


def log_sigmoid(lowered: set[str]) -> bool:
    """A log-sigmoid of a margin: `F.logsigmoid(…)`, or `torch.log(torch.sigmoid(…))`."""
    return bool({"logsigmoid", "log_sigmoid"} & lowered) or {"log", "sigmoid"} <= lowered


def family(method: str) -> str:
    """The family a method belongs to (RL, preference, distillation; any other is its own)."""
    for name, members in (("RL", RL), ("preference", PREFERENCE), ("distillation", DISTILLATION)):
        if method in members:
            return name
    return method


MISSING_PART = {"distillation": "teacher model", "RL": "reward"}
"""What the code must hold for a name of that family to count."""


def code_objective(node: ast.AST, *, self_distilled: bool = False) -> tuple[str, str] | None:
    """What a trainer class's (or a LightningModule's) own code optimises, and why: the shape of
    its loss (chosen/rejected log-sigmoid, a KL to a teacher, a clipped probability ratio
    times advantages), the losses it names (`DPOLoss`, `sft_loss`, `compute_policy_loss`; a
    non-supervised one outranks a supervised auxiliary term), or sampled generations scored by
    a reward. `self_distilled`: the module is on-policy self-distillation (`self_taught`), so
    a teacher's KL or a distillation loss name is no distillation."""
    if isinstance(node, ast.ClassDef):
        shaped = loss_shape_method(node, self_distilled=self_distilled)
        if shaped:
            return shaped, "loss computed in its training step"
    ids = identifiers(node)
    named: dict[str, str] = {}
    for ident in sorted(ids):
        method = method_of_loss(ident)
        if method and not (self_distilled and method in DISTILLATION):
            named.setdefault(method, ident)
    if named:
        best = primary_method(set(named) - {"SFT"}) or "SFT"
        return best, f"loss {named[best]}"
    clipped = _clipped_policy_gradient(node, ids)
    if clipped:
        return clipped
    if (_SAMPLING & ids or any(ADVANTAGE_NAME.search(i) for i in ids)) and \
            any(REWARD_NAME.search(i) for i in ids):
        if any(GROUP_NAME.search(i) for i in ids):
            return "GRPO", "groups of sampled generations scored by a reward"
        return "REINFORCE", "sampled generations scored by a reward"
    return None


def name_holds(method: str, ids: set[str], *, self_distilled: bool = False) -> bool:
    """A method a class's name claims, checked against the code around it: distillation needs a
    teacher model (not the model itself on its own samples), RL a reward or an advantage; the
    others are taken as named."""
    if method in DISTILLATION:
        return not self_distilled and any(TEACHER_NAME.search(i) for i in ids)
    if method in RL:
        return any(REWARD_NAME.search(i) or ADVANTAGE_NAME.search(i) for i in ids)
    return True


def loop_objective(tree: ast.AST, *, generate: bool, filtered: bool) -> tuple[str, str]:
    """What a hand-written update in `tree` optimises, and why (the words that follow
    "hand-written loop"): `generate` says the code samples generations, `filtered` that it
    keeps only some of them (rejection sampling)."""
    ids = identifiers(tree)
    clipped = _clipped_policy_gradient(tree, ids)
    if clipped:
        return clipped[0], f"on {clipped[1]}"
    rewards = any(REWARD_NAME.search(i) for i in ids)
    # Sampled generations, or log-probabilities weighted by advantages (the rollouts may be
    # sampled in another module), scored by a reward: policy-gradient RL.
    if rewards and (generate or any(ADVANTAGE_NAME.search(i) for i in ids)):
        if any(GROUP_NAME.search(i) for i in ids):
            return "GRPO", "on groups of sampled generations scored by a reward"
        return "REINFORCE", "on sampled generations scored by a reward"
    if any(TEACHER_NAME.search(i) for i in ids) and ({"kl_div", "log_softmax"} & ids):
        if self_taught(tree):
            return "SFT", "on the model's own samples, matching itself (self-distillation, no teacher model)"
        return "distillation", "matching a teacher's distribution"
    if sum(1 for i in ids if PAIR_NAME.search(i)) >= 2 and log_sigmoid({i.lower() for i in ids}):
        return "DPO", "on chosen/rejected log-probabilities"
    if filtered:
        return "SFT", "on filtered self-generated samples"
    return "SFT", "with a supervised loss"
