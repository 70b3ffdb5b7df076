"""`torch.backends.mps`: Apple's Metal has no actorgrad device."""


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
