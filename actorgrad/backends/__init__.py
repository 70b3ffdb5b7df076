"""`torch.backends`: the flags training scripts set for cuDNN, cuBLAS, MPS and the CPU.

actorgrad runs no cuDNN and no TF32 passes, so these are settings kept and read back, without effect, for scripts
that set or check them. One has a meaning here: `cuda.matmul.allow_tf32` reads and sets PyTorch's float32 matmul
precision (`actorgrad.set_float32_matmul_precision`), as PyTorch ties the two.
"""

from actorgrad.backends import cpu, cuda, cudnn, mps

__all__ = ["cpu", "cuda", "cudnn", "mps"]
