"""``python -m mgpu_io``: the command line."""

if __name__ == "__main__":
    from mgpu_io.cli import run

    run()
