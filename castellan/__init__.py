"""The `castellan` command line: one subcommand module per job, each in castellan/commands/."""
