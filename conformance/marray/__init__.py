"""marray's tests (masked arrays over any Array API namespace) with hxarray as the namespace."""
