"""CUDA runtime layer: the driver interface (`driver`), the CuPy driver, the CPU simulator (`sim`),
NVRTC verification (`nvrtc`) and the typed launch helper (`raw`). No backend is registered here."""
