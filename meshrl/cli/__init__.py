"""The `meshrl` command: train, serve, models, data. Subcommands live in their own files."""
