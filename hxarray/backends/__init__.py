"""The backend layer, above `Array` and below the namespace: `Backend` (base.py: what a device type
provides, with the default compositions), the registry that finds the backend of each device type
(registry.py), fused expressions (fusion.py), device selection and performance estimates; then
the built-in backends, one folder per device type (cpu/, cuda/). Plug-ins are written against
`hxarray.plugin`."""

from .registry import registry  # the HAL's devices find their backends through it from now on

__all__ = ["registry"]
