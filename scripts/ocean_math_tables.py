#!/usr/bin/env python
"""The polynomial table of ocean/ocean_math.h's erff, printed as C: paste it over the `pieces` table of
ocean_erff there.

    .venv/bin/python scripts/ocean_math_tables.py

erf on [0.5, 4) in seven pieces of width 0.5: on each, a degree-12 Chebyshev fit at 200 Chebyshev nodes
of Python's math.erf, in the piece's variable t = (x - centre) / 0.25, converted to powers of t for
Horner's rule. Below 0.5 the header uses erf's own Taylor series. The script also prints the worst
relative error of the table on a fine grid (about 1e-15).
"""
import math

import numpy as np
from numpy.polynomial import chebyshev

DEGREE, WIDTH, FIRST, PIECES = 12, 0.5, 0.5, 7


def table() -> list[np.ndarray]:
    erf = np.vectorize(math.erf)
    nodes = np.cos(np.pi * (np.arange(200) + 0.5) / 200)
    pieces = []
    for k in range(PIECES):
        centre = FIRST + WIDTH * k + WIDTH / 2
        fit = chebyshev.chebfit(nodes, erf(centre + WIDTH / 2 * nodes), DEGREE)
        pieces.append(chebyshev.cheb2poly(fit))
    return pieces


def worst_error(pieces: list[np.ndarray]) -> float:
    erf = np.vectorize(math.erf)
    worst = 0.0
    for k, coefficients in enumerate(pieces):
        x = np.linspace(FIRST + WIDTH * k, FIRST + WIDTH * (k + 1), 20001)
        t = (x - (FIRST + WIDTH * k + WIDTH / 2)) / (WIDTH / 2)
        value = np.zeros_like(t)
        for c in coefficients[::-1]:
            value = value * t + c
        worst = max(worst, float(np.max(np.abs(value - erf(x)) / erf(x))))
    return worst


def main() -> None:
    pieces = table()
    print(f'static const double pieces[{PIECES}][{DEGREE + 1}] = {{')
    for coefficients in pieces:
        numbers = [f'{c:.17e}' for c in coefficients]
        lines = [', '.join(numbers[i:i + 4]) for i in range(0, len(numbers), 4)]
        print('    {' + (',\n     '.join(lines)) + '},')
    print('};')
    print(f'/* worst relative error on the grid: {worst_error(pieces):.2e} */')


if __name__ == '__main__':
    main()
