"""Backends: one folder per device type, each with device, allocator, stream and backend parts."""
