"""The bf16 matmul rate of this GPU through PyTorch (8192^3, random data), the prompt limit's rate.

Prints one integer, TFLOP/s: the median of 10 timed products after 3 warm-ups (CUDA events).
"""
import torch

n = 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    a @ b
torch.cuda.synchronize()
times = []
for _ in range(10):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    a @ b
    end.record()
    torch.cuda.synchronize()
    times.append(start.elapsed_time(end))
times.sort()
print(round(2 * n**3 / (times[len(times) // 2] * 1e-3) / 1e12))
