"""`a2rl certify`: a task's scorer against a library of adversarial policies (see
`a2rl.certify._certify` for the rule and `a2rl.certify._policies` for the classes)."""

from a2rl.certify._certify import (
    CERTIFICATE_FORMAT,
    DEFAULT_ITEMS,
    Certificate,
    ClassResult,
    Scored,
    base_model_score,
    certify,
)
from a2rl.certify._page import certificate_markdown, load_task_folder, write_certificate
from a2rl.certify._policies import CLASSES, PolicyClass, policy_classes

__all__ = ["CERTIFICATE_FORMAT", "CLASSES", "DEFAULT_ITEMS", "Certificate", "ClassResult",
           "PolicyClass", "Scored", "base_model_score", "certificate_markdown", "certify", "load_task_folder",
           "policy_classes", "write_certificate"]
