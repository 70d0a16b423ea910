"""examples/mlp-1024-4096-1000.yaml as a PyTorch module, for the README's captured-module
examples: ``roofline sweep examples.torch_mlp:make --hw v100 --batch 1..1024 --mode inference
--dtype fp16`` (run from the checkout's root) captures it at each batch, the factory called
with it. Linear layers without bias, as the model file's (``bias: false`` by default)."""

import torch


def make(batch: int = 512) -> tuple[torch.nn.Module, torch.Tensor]:
    """The MLP 1024 -> 4096 -> 1000 and an input of ``batch`` samples."""
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096, bias=False),
                                torch.nn.Linear(4096, 1000, bias=False))
    return model, torch.zeros(batch, 1024)
