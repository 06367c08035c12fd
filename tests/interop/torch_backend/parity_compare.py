# Compares two parity.py runs rank by rank: every result of the "spmd" run must match the
# "gloo" run's (tensors: same dtype and shape, values within float32 rounding of a different
# summation order; texts: equal). Prints one line per result kind and exits 1 on a difference.
# Usage: parity_compare.py GLOO_PREFIX SPMD_PREFIX WORLD_SIZE
import sys

import torch


def main():
    gloo_prefix, spmd_prefix, world = sys.argv[1], sys.argv[2], int(sys.argv[3])
    bad, checked, worst = [], 0, 0.0
    for rank in range(world):
        want = torch.load(f"{gloo_prefix}.{rank}.pt")
        got = torch.load(f"{spmd_prefix}.{rank}.pt")
        if sorted(want) != sorted(got):
            bad.append(f"rank {rank}: results {sorted(set(want) ^ set(got))} in only one run")
        for key in sorted(set(want) & set(got)):
            a, b = want[key], got[key]
            checked += 1
            if isinstance(a, torch.Tensor):
                same_kind = a.dtype == b.dtype and a.shape == b.shape
                if not same_kind:
                    bad.append(f"rank {rank} {key}: gloo {a.dtype}{list(a.shape)}, spmd {b.dtype}{list(b.shape)}")
                    continue
                diff = (a.double() - b.double()).abs().max().item() if a.numel() else 0.0
                worst = max(worst, diff)
                if not torch.allclose(a.double(), b.double(), rtol=1e-5, atol=1e-6):
                    bad.append(f"rank {rank} {key}: max difference {diff:.3g}")
            elif a != b:
                bad.append(f"rank {rank} {key}: gloo {a!r}, spmd {b!r}")
    for line in bad:
        print("parity_compare: DIFFERENT", line)
    kinds = sorted({k.split(".")[0] for k in torch.load(f"{gloo_prefix}.0.pt")})
    print(f"parity_compare: {checked} results of {world} ranks ({', '.join(kinds)}): "
          f"{'identical to gloo' if not bad else f'{len(bad)} differ'} (largest difference {worst:.3g})")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
