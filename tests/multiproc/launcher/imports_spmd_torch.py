# A script for the "spmd" backend, for runs under a Python that lacks spmd_torch.
import spmd_torch  # noqa: F401
