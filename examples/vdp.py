"""Van der Pol's oscillator, a problem file for ``dynkit solve`` and ``dynkit stiffness``.

    dynkit solve examples/vdp.py                                     # mu = 1: not stiff, dopri5
    dynkit solve examples/vdp.py --param mu=1000 --t 0,3000 --method auto --plot vdp.png
    dynkit stiffness examples/vdp.py --param mu=1000 --t 0,3000

y1'' - mu (1 - y1^2) y1' + y1 = 0 as a first-order system (MATLAB's vdp1000 at mu = 1000): stiff for
large mu, where the slow branches take a time of order mu and the jumps between them a time of order
1/mu.
"""

import numpy as np

mu = 1.0  # a parameter: `--param mu=1000` sets it before the solve


def f(t, y):
    return np.array([y[1], mu * (1.0 - y[0] ** 2) * y[1] - y[0]])


y0 = np.array([2.0, 0.0])
t = np.linspace(0.0, 20.0, 201)
