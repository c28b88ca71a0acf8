"""The `simsched` command. Ctrl-C while it imports ends it quietly (startup.py); app.py, the
last module the command imports before `main` runs, hands SIGINT back."""

from simsched.cli.startup import hold_interrupts

hold_interrupts()
