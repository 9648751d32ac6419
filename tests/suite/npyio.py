"""Minimal .npy reader/writer (NumPy format 1.0) for the test suite; standard library only."""
import ast
import struct

_DT = {'f4': ('<f4', 'f'), 'i4': ('<i4', 'i')}


def write(path, dtype, shape, flat):
    """dtype 'f4' or 'i4'; flat is a list in C order."""
    descr, code = _DT[dtype]
    shape_s = '(' + ''.join(f'{d}, ' if len(shape) == 1 else f'{d}, ' for d in shape).rstrip(', ')
    shape_s += ',)' if len(shape) == 1 else ')'
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_s)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + ' ' * pad + '\n'
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) + header.encode('latin1'))
        if dtype == 'f4':
            f.write(struct.pack('<%df' % len(flat), *[float(v) for v in flat]))
        else:
            f.write(struct.pack('<%di' % len(flat), *[int(v) for v in flat]))


def read(path):
    """Returns (dtype, shape, flat list)."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:6] != b'\x93NUMPY':
        raise ValueError(f'{path}: not a .npy file')
    major = data[6]
    if major == 1:
        hlen = struct.unpack('<H', data[8:10])[0]
        start = 10
    else:
        hlen = struct.unpack('<I', data[8:12])[0]
        start = 12
    header = ast.literal_eval(data[start:start + hlen].decode('latin1'))
    descr = header['descr']
    shape = tuple(header['shape'])
    n = 1
    for d in shape:
        n *= d
    body = data[start + hlen:]
    if descr == '<f4':
        return 'f4', shape, list(struct.unpack('<%df' % n, body[:4 * n]))
    if descr == '<i4':
        return 'i4', shape, list(struct.unpack('<%di' % n, body[:4 * n]))
    raise ValueError(f'{path}: unexpected dtype {descr}')


def f32(v):
    """Rounds a Python float to binary32."""
    return struct.unpack('<f', struct.pack('<f', v))[0]


def exact_diff(got, want):
    """None when got equals want element for element, else what differs and where first."""
    bad = [k for k in range(len(want)) if got[k] != want[k]]
    if not bad:
        return None
    return f'{len(bad)} of {len(want)} elements differ, first at {bad[0]}: {got[bad[0]]} against {want[bad[0]]}'


def finish(name, backend, count, fails, summary):
    """Prints the failures and the summary line of a fuzzer; its exit status."""
    for f in fails:
        print('FAIL', f)
    print(f'{name} ({backend}): {count - len(fails)} of {count} passed, {summary}')
    return 1 if fails else 0
