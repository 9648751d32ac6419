#!/usr/bin/env python3
"""ncu_summary.py SASS.csv[.gz] [TOP]: summarizes ncu's per-instruction source page of one
kernel (`ncu -i R --page source --csv --print-source sass`): executed warp instructions,
the share of each stall reason in the warp-state samples, and the TOP (default 25) hottest
regions of consecutive executed instructions, with how often they ran and their stalls."""
import csv
import gzip
import sys
from collections import Counter


def rows_of(path):
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt') as f:
        rows = list(csv.reader(f))
    # the first row names the kernel, the second the columns
    if len(rows) < 2:
        sys.exit(f'ncu_summary: {path}: no column row (is this ncu\'s source page as CSV?)')
    hdr = rows[1]
    return hdr, [r for r in rows[2:] if len(r) >= len(hdr)]


def num(r, i):
    try:
        return int(r[i])
    except (ValueError, IndexError):
        return 0


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    hdr, data = rows_of(sys.argv[1])
    col = {h: i for i, h in enumerate(hdr)}
    for need in ('Address', 'Source', 'Instructions Executed', 'Warp Stall Sampling (All Samples)'):
        if need not in col:
            sys.exit(f'ncu_summary: no column {need!r} (is this the SASS source page?)')
    stalls = [h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
    total = Counter()
    executed = 0
    regions = []
    cur = None
    base = int(data[0][col['Address']], 16) if data else 0
    for r in data:
        n = num(r, col['Instructions Executed'])
        executed += n
        for s in stalls:
            total[s] += num(r, col[s])
        if n == 0:
            cur = None
            continue
        at = (int(r[col['Address']], 16) - base) // 16
        if cur is None:
            cur = {'start': at, 'end': at, 'exec': 0, 'max': 0, 'samples': 0,
                   'first': r[col['Source']].strip()}
            regions.append(cur)
        cur['end'] = at
        cur['exec'] += n
        cur['max'] = max(cur['max'], n)
        cur['samples'] += num(r, col['Warp Stall Sampling (All Samples)'])
    print(f'{len(data)} SASS instructions ({len(data) * 16 / 1024:.1f} KB), '
          f'{executed} warp instructions executed')
    samples = sum(total.values()) or 1
    print('stall reasons (share of the warp-state samples):')
    for s, v in total.most_common(10):
        print(f'  {s[6:]:20s} {100 * v / samples:5.1f}%')
    regions.sort(key=lambda x: -x['exec'])
    print(f'hottest regions (instruction index from the kernel start; ran = the most executed '
          f'instruction\'s count):')
    for x in regions[:top]:
        print(f"  {x['start']:6d}-{x['end']:6d} {x['end'] - x['start'] + 1:4d} instr "
              f"{100 * x['exec'] / max(executed, 1):5.1f}% of executed, ran {x['max']:>9d}, "
              f"{100 * x['samples'] / samples:5.1f}% of samples  {x['first'][:40]}")


if __name__ == '__main__':
    main()
