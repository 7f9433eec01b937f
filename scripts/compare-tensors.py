#!/usr/bin/env python3
"""Compares the tensors of one pass written by llama.cpp (scripts/llama-cpp-tensors.cpp) and by
inferd (INFERD_DUMP_TENSORS=DIR), in pipeline order, and names the first that differs.

    python3 scripts/compare-tensors.py LLAMA_DIR INFERD_DIR [--all]

Where the two hold different numbers of rows (llama.cpp's last layer keeps only the output
rows; inferd's files hold its last pass, at most 64 rows), the trailing rows are compared.
Counts of differing values and the largest difference per tensor; --all goes on past the
first difference. Not used by the tests.
"""
import os
import sys

import numpy as np


def names(directory):
    """The tensor names of llama.cpp's index, in the order its graph computed them."""
    with open(os.path.join(directory, 'index.txt')) as f:
        return [line.split()[0] for line in f if line.strip()]


def main():
    llama, inferd = sys.argv[1], sys.argv[2]
    show_all = '--all' in sys.argv
    compared = 0
    for name in names(llama) + ['logits']:
        a = os.path.join(llama, name + '.f32')
        b = os.path.join(inferd, name + '.f32')
        if not (os.path.exists(a) and os.path.exists(b)):
            continue
        x = np.fromfile(b, dtype=np.float32)
        y = np.fromfile(a, dtype=np.float32)
        size = min(x.size, y.size)
        x, y = x[-size:], y[-size:]
        differing = int((x != y).sum())
        worst = float(np.abs(x - y).max()) if size else 0.0
        compared += 1
        print(f'{name:24s} {size:8d} values  {differing:7d} differ  largest {worst:.3g}')
        if differing and not show_all:
            print(f'first difference: {name}')
            return
    print(f'{compared} tensors compared')


if __name__ == '__main__':
    main()
