"""`python -m simsched` runs the command-line interface, as the `simsched` script does."""

from simsched.cli.app import main

if __name__ == "__main__":
    main()
