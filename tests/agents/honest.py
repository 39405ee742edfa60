"""A scripted agent for the integration test: 'trains' (perturbs weights), submits, resubmits
identical weights (cache hit), submits a base-model copy, reads the timer, exits."""

import json
import os
import shutil
import subprocess
import urllib.request

import torch
from safetensors.torch import load_file, save_file


def submit(path):
    req = urllib.request.Request(os.environ["A2RL_GRADER_URL"] + "/submit",
                                 data=json.dumps({"model_path": path}).encode(),
                                 headers={"Authorization": "Bearer " + os.environ["A2RL_TOKEN"]})
    with urllib.request.urlopen(req, timeout=600) as r:
        out = json.load(r)
    print("SUBMIT", path, json.dumps(out), flush=True)
    return out


model = os.environ["MODEL_PATH"]
shutil.copytree(model, "output/v1")
os.chmod("output/v1", 0o755)  # the base model's folder is read-only; so is a copy of it
for f in os.listdir("output/v1"):
    os.chmod(os.path.join("output/v1", f), 0o644)
w = load_file("output/v1/model.safetensors")
torch.manual_seed(0)
w = {k: v + 0.05 * torch.randn_like(v) for k, v in w.items()}
save_file(w, "output/v1/model.safetensors", metadata={"format": "pt"})
shutil.copytree("output/v1", "output/v1-again")
shutil.copytree(model, "output/base-copy")
print(subprocess.run(["./timer.sh"], capture_output=True, text=True).stdout, flush=True)
submit("output/v1")
submit("output/v1-again")
submit("output/base-copy")
