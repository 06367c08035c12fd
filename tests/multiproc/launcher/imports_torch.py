# A program that needs torch, for runs under a Python that lacks it.
import torch  # noqa: F401
