"""Constants (spec: "Constants")."""

import math

e = math.e
inf = math.inf
nan = math.nan
pi = math.pi
newaxis = None

__all__ = ["e", "inf", "nan", "newaxis", "pi"]
