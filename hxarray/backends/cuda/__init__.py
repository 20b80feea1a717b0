"""CUDA: the backend (`backend.py`, registered as `hxarray.backends.cuda.backend:CudaBackend`),
its compiled kernels (`library`) and launch plans (`launch`) over the shared code generation
(`hxarray/backends/codegen`) and the runtime layer: the driver interface (`driver`), the CuPy
driver, the CPU simulator (`sim`), NVRTC verification (`nvrtc`) and the typed launch helper
(`raw`). Importing this package loads none of them."""
