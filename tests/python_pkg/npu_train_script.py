"""A small training script written as Ascend model code is: torch_npu imported, the device chosen by
torch.npu.is_available(), attention by torch_npu.npu_fusion_attention with a causal sparse mode. test_npu.py runs it
unchanged on the CPU (`python -m flashref.npu run npu_train_script.py`) and compares its losses with the same model
on flashref.torch.attention (train() with another attention function).

usage: npu_train_script.py [--steps N]
"""
import argparse

import torch
import torch_npu


class Block(torch.nn.Module):
    def __init__(self, dim, heads, attention):
        super().__init__()
        self.heads, self.attention = heads, attention
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        o = self.attention(q.contiguous(), k.contiguous(), v.contiguous(), self.heads, mask)
        return x + self.proj(o)


def npu_attention(q, k, v, heads, mask):
    return torch_npu.npu_fusion_attention(q, k, v, heads, "BSH", atten_mask=mask, scale=(q.shape[-1] // heads) ** -0.5,
                                          pre_tockens=65536, next_tockens=0, sparse_mode=2)[0]


def train(steps, device, attention):
    torch.manual_seed(0)
    blocks = torch.nn.ModuleList([Block(32, 4, attention) for _ in range(2)]).to(device)
    head = torch.nn.Linear(32, 32).to(device)
    opt = torch.optim.Adam(list(blocks.parameters()) + list(head.parameters()), lr=1e-2)
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1).to(device)   # compressed causal mask
    x = torch.randn(4, 24, 32).to(device)
    target = torch.roll(x, shifts=1, dims=1)                 # predict the previous token: needs the causal attention
    losses = []
    for _ in range(steps):
        h = x
        for b in blocks:
            h = b(h, mask)
        loss = torch.nn.functional.mse_loss(head(h), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    device = "npu" if torch.npu.is_available() else "cpu"
    print("device %s" % device)
    for step, loss in enumerate(train(a.steps, device, npu_attention)):
        print("step %d loss %r" % (step, loss))
