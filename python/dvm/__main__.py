"""python -m dvm info: prints what `dvm info` prints."""
import sys


def main(argv):
    if len(argv) != 1 or argv[0] != "info":
        sys.stderr.write("usage: python -m dvm info\n  info  the backends and devices found, and why others are "
                         "missing\n")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    import dvm
    sys.stdout.write(dvm.info())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
