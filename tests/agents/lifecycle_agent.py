"""An agent that submits one trained-looking model (perturbed weights) in the background and
then works on until it is stopped: the lifecycle tests signal the harness while it runs."""

import json
import os
import shutil
import threading
import time
import urllib.request

import torch
from safetensors.torch import load_file, save_file

shutil.copytree(os.environ["MODEL_PATH"], "output/v1")
os.chmod("output/v1", 0o755)
for f in os.listdir("output/v1"):
    os.chmod(os.path.join("output/v1", f), 0o644)
w = load_file("output/v1/model.safetensors")
torch.manual_seed(0)
save_file({k: v + 0.05 * torch.randn_like(v) for k, v in w.items()},
          "output/v1/model.safetensors", metadata={"format": "pt"})


def submit() -> None:
    req = urllib.request.Request(os.environ["A2RL_GRADER_URL"] + "/submit",
                                 data=json.dumps({"model_path": "output/v1"}).encode(),
                                 headers={"Authorization": "Bearer " + os.environ["A2RL_TOKEN"]})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            print("SUBMIT", r.read().decode(), flush=True)
    except Exception as exc:  # the harness may stop mid-request
        print("SUBMIT failed", exc, flush=True)


threading.Thread(target=submit, daemon=True).start()
print("AGENT-WORKING", flush=True)
while True:
    time.sleep(1)
